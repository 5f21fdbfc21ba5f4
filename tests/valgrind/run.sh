#!/bin/sh
# Integration tests with ingressd under valgrind (memcheck):
#
#	sh tests/valgrind/run.sh [-k PATTERN]...	(default: the subset below)
#
# Builds nothing: uses build/ingressd and build/replica-* (make all).  A
# directory build/valgrind/ stands in for build/: its `ingressd` is a script
# that execs valgrind on the real binary, its replica-*, mod-*.so (loaded
# into ingressd: under valgrind with it) and ingressd-host are links to the real
# ones (replicas are not under valgrind), and BUILD=build/valgrind points the
# unchanged harness at it.  Each ingressd run writes build/valgrind/vg/PID.log
# and exits 99 on any memcheck error or definite/indirect leak, which the
# harness reports as a failed test (it expects exit status 0).
#
# At the end: every valgrind log with an error or a leak is printed with its
# stacks; the exit status is 1 if a test failed or a log has findings.

cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
VG=build/valgrind
command -v valgrind >/dev/null 2>&1 || { echo "valgrind: not installed" >&2; exit 1; }
[ -x build/ingressd ] || { echo "valgrind: build/ingressd missing (make all)" >&2; exit 1; }

rm -rf "$VG/vg"
mkdir -p "$VG/vg" || exit 1
for r in build/replica-* build/mod-*.so build/ingressd-host; do
	ln -sf "$ROOT/$r" "$VG/$(basename "$r")"
done
# Test modules (a wrong ABI, a blocking handler) under tests/.
mkdir -p "$VG/tests"
for r in build/tests/mod-*.so; do
	[ -e "$r" ] && ln -sf "$ROOT/$r" "$VG/tests/$(basename "$r")"
done
cat >"$VG/ingressd" <<EOF
#!/bin/sh
exec valgrind --tool=memcheck --leak-check=full \\
    --show-leak-kinds=definite,indirect,possible \\
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \\
    --num-callers=30 --track-origins=yes --child-silent-after-fork=yes \\
    --log-file="$ROOT/$VG/vg/%p.log" "$ROOT/build/ingressd" "\$@"
EOF
chmod 755 "$VG/ingressd"

# A representative subset: every request path (bodies both ways, chunked,
# pipelining, keep-alive, errors and limits, hostile input, slow clients,
# streaming, replica failures and restarts, graceful stop).  Tests whose
# assertions are about wall-clock speed are left out: valgrind is ~30x
# slower.
if [ $# -eq 0 ]; then
	set -- -k test_proxy_echo -k test_http_ -k test_names \
	    -k test_proxy_streaming -k test_resilience_failover.Supervisor \
	    -k test_ops_stop.SignalStop -k test_ops_admin -k test_admin \
	    -k test_hostile_smuggling \
	    -k test_hostile_limits -k test_body_stall -k never_read \
	    -k test_inproc.Names -k test_inproc.Reload \
	    -k test_inproc_parity.EchoInproc
fi

BUILD=$VG python3 tests/integ/run.py -t 180 "$@"
rc=$?

bad=0
runs=0
for log in "$VG"/vg/*.log; do
	[ -f "$log" ] || continue
	runs=$((runs + 1))
	errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
	def=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -n 1)
	ind=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -n 1)
	if [ -z "$errs" ]; then
		echo "== $log: no summary (killed before exit?)"
		bad=$((bad + 1))
	elif [ "$errs" != 0 ] || [ "${def:-0}" != 0 ] || [ "${ind:-0}" != 0 ]; then
		echo "== $log: $errs errors, definitely lost ${def:-0}, indirectly lost ${ind:-0}"
		sed -n '/^==[0-9]*== [A-Z].*\(Invalid\|uninitialised\|Mismatched\|lost in loss record\|overlap\|Syscall\)/,/^==[0-9]*== $/p' "$log" | head -n 200
		bad=$((bad + 1))
	fi
done
echo "valgrind: $runs ingressd runs, $bad with findings (logs in $VG/vg/)"
[ "$rc" -eq 0 ] && [ "$bad" -eq 0 ]
