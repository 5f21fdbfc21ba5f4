"""The same handler, three ways: representative echo, streaming, deadline,
cancel and flow-control tests run unchanged against build/mod-KIND.so
loaded into ingressd ("inproc") and served by build/ingressd-host over the
wire ("hosted"); the originals run them against build/replica-KIND.  The
handler must see the same events in the same order in every host, so the
assertions are the originals'."""

import unittest

import harness
import test_proxy_echo
import test_proxy_streaming
import test_resilience_deadlines
import test_resilience_flow


class Mode:
	mode = "wire"

	def setUp(self):
		harness.REPLICA_MODE["mode"] = self.mode
		super().setUp()

	def tearDown(self):
		harness.REPLICA_MODE["mode"] = "wire"
		super().tearDown()


class EchoInproc(Mode, test_proxy_echo.Echo):
	mode = "inproc"


class EchoHosted(Mode, test_proxy_echo.Echo):
	mode = "hosted"


class StreamingInproc(Mode, test_proxy_streaming.Streaming):
	mode = "inproc"


class StreamingHosted(Mode, test_proxy_streaming.Streaming):
	mode = "hosted"


class DeadlinesInproc(Mode, test_resilience_deadlines.Deadlines):
	mode = "inproc"


class DeadlinesHosted(Mode, test_resilience_deadlines.Deadlines):
	mode = "hosted"


class FlowInproc(Mode, test_resilience_flow.Flow):
	mode = "inproc"


class FlowHosted(Mode, test_resilience_flow.Flow):
	mode = "hosted"


if __name__ == "__main__":
	unittest.main()
