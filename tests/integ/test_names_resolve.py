"""Names are resolved on first use, once, and warmed with PING/PONG."""

import threading
import unittest

from harness import Daemon


class Names(unittest.TestCase):

	def test_resolve_once_and_warm(self):
		with Daemon({"workers": 1}) as d:
			deps = d.deployments()
			self.assertEqual(deps["echo"]["state"], "idle", deps)
			self.assertEqual(deps["echo"]["resolutions"], 0, deps)

			nconn, per = 4, 250
			results = [[] for _ in range(nconn)]
			errors = []

			def client(k):
				try:
					with d.conn(timeout=10) as c:
						for i in range(per):
							r = c.request("GET",
							    "/echo/n/%d/%d" %
							    (k, i))
							if r.status != 200:
								errors.append(r)
								return
							results[k].append(
							    r.json())
				except Exception as e:	# reported below
					errors.append(e)

			threads = [threading.Thread(target=client, args=(k,),
			    daemon=True) for k in range(nconn)]
			for t in threads:
				t.start()
			for t in threads:
				t.join(45)
			self.assertFalse(any(t.is_alive() for t in threads),
			    "clients still running after 45 s")
			self.assertEqual(errors, [])
			answers = [j for rs in results for j in rs]
			self.assertEqual(len(answers), nconn * per)

			by_replica = {}
			for j in answers:
				self.assertGreaterEqual(j["conn_pings"], 1, j)
				by_replica[j["replica"]] = \
				    by_replica.get(j["replica"], 0) + 1
			self.assertEqual(set(by_replica), {"echo-0", "echo-1"},
			    by_replica)
			for rid, n in by_replica.items():
				self.assertGreater(n, len(answers) * 0.2,
				    by_replica)

			deps = d.deployments()
			echo = deps["echo"]
			self.assertEqual(echo["state"], "ready", echo)
			self.assertEqual(echo["resolutions"], 1, echo)
			self.assertEqual(len(echo["replicas"]), 2, echo)
			total = 0
			for r in echo["replicas"]:
				self.assertEqual(r["state"], "ready", r)
				self.assertGreaterEqual(r["pings"], 1, r)
				self.assertGreaterEqual(r["pongs"], 1, r)
				self.assertEqual(r["in_flight"], 0, r)
				self.assertEqual(r["requests"],
				    by_replica[r["id"]], r)
				total += r["requests"]
			self.assertEqual(total, nconn * per)
			# Untouched names stay unresolved.
			self.assertEqual(deps["hello"]["state"], "idle", deps)
			self.assertEqual(deps["hello"]["resolutions"], 0, deps)


if __name__ == "__main__":
	unittest.main()
