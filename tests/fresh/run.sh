#!/bin/bash
# tests/fresh/run.sh -- the README on a pristine Debian 12 machine.
#
#   tests/fresh/run.sh [--only PHASES] [--keep]
#
# Builds a bookworm root with debootstrap (nothing but build-essential, git,
# python3, curl, ca-certificates; the mirror is the one this machine's apt
# uses), clones this checkout's committed HEAD into it and, chrooted there:
#   run    `make run` until `curl localhost:8000/echo` answers, then stops it
#   check  `make check`
#   deb    `dpkg-buildpackage -us -uc -b`, then `apt-get install ./ingressd_*.deb`
#          in a second clean root, runs the unit's ExecStart line and curls it
# PHASES is a comma-separated subset (default run,check,deb).  --keep leaves
# the work root in place.  Needs root.  Too slow for every CI run: run it
# whenever the Makefile, scripts/deps.sh or debian/ change.
#
# The debootstrap result is cached in /var/cache/ingressd-fresh (delete it to
# start over); the roots live under /var/tmp.  The chroots share this host's
# network: ports 8000 and 8001 (the default conf) must be free.
set -u
PHASES=run,check,deb
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--only) PHASES=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	*) echo "usage: $0 [--only run,check,deb] [--keep]" >&2; exit 2 ;;
	esac
done

TOP=$(cd "$(dirname "$0")/../.." && pwd)
SUITE=bookworm
CACHE=/var/cache/ingressd-fresh
TARBALL=$CACHE/$SUITE-base.tar
WORK=$(mktemp -d /var/tmp/ingressd-fresh.XXXXXX) || exit 1
LOGS=$WORK/logs
RUN_WAIT=${FRESH_RUN_WAIT:-1200}	# s: packages + build + replicas up
CHECK_TIME=${FRESH_CHECK_TIME:-3600}
MOUNTED=""
RESULTS=""
FAILED=0
mkdir -p "$LOGS"

say() { printf 'fresh: %s\n' "$*"; }
die() { say "FAIL: $*"; FAILED=1; summary; exit 1; }
has() { case ",$PHASES," in *",$1,"*) return 0 ;; esac; return 1; }
result() {	# phase PASS|FAIL seconds detail
	RESULTS="$RESULTS$(printf '  %-6s %-4s %5ss  %s' "$1" "$2" "$3" "$4")
"
	[ "$2" = PASS ] || FAILED=1
}

summary() {
	echo
	echo "==== fresh-machine summary ($SUITE, HEAD $(git -C "$TOP" rev-parse --short HEAD)) ===="
	printf '%s' "$RESULTS"
	echo "  logs: $LOGS"
	if [ "$FAILED" -eq 0 ]; then echo "fresh: PASS"; else echo "fresh: FAIL"; fi
}

unmount_all() {
	local m
	for m in $MOUNTED; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	MOUNTED=""
}

cleanup() {
	unmount_all
	if [ "$KEEP" -eq 0 ]; then
		# Keep the logs: everything else in the work root goes.
		find "$WORK" -mindepth 1 -maxdepth 1 ! -name logs \
		    -exec rm -rf --one-file-system {} + 2>/dev/null
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mount)"
for c in debootstrap chroot git curl tar; do
	command -v "$c" >/dev/null || die "needs $c on this machine"
done

# The ports the default conf listens on: another ingressd there would
# answer our curl and prove nothing.
ports_free() {
	/usr/bin/python3 - "$@" <<'PY'
import socket, sys
busy = []
for p in sys.argv[1:]:
	s = socket.socket()
	try:
		s.bind(("127.0.0.1", int(p)))
	except OSError:
		busy.append(p)
	finally:
		s.close()
if busy:
	print("port(s) %s on 127.0.0.1 in use" % " ".join(busy))
	sys.exit(1)
PY
}

# The first bookworm mirror in this machine's apt sources (deb822 or
# one-line format); Debian's own when there is none.
mirror() {
	local f m=""
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		m=$(awk -v s="$SUITE" '
		    /^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++)
			if ($i == s) ok = 1 }
		    /^$/ { if (ok && u != "") { print u; exit } ok = 0; u = "" }
		    END { if (ok && u != "") print u }' "$f" | head -n1)
		[ -n "$m" ] && break
	done
	if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
		m=$(awk -v s="$SUITE" '$1 == "deb" && $0 ~ " " s " " {
		    for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {
			print $i; exit } }' /etc/apt/sources.list)
	fi
	echo "${m:-http://deb.debian.org/debian}"
}

base_tarball() {
	[ -s "$TARBALL" ] && return 0
	local m
	m=$(mirror)
	say "debootstrap $SUITE from $m (cached in $TARBALL afterwards)"
	mkdir -p "$CACHE"
	debootstrap --variant=minbase \
	    --include=build-essential,git,python3,curl,ca-certificates \
	    "$SUITE" "$WORK/base" "$m" >"$LOGS/debootstrap.log" 2>&1 ||
		die "debootstrap failed (see $LOGS/debootstrap.log)"
	tar -C "$WORK/base" --numeric-owner -cf "$TARBALL.tmp" . &&
	    mv "$TARBALL.tmp" "$TARBALL" || die "could not write $TARBALL"
	rm -rf --one-file-system "$WORK/base"
}

# A clean root from the cached tarball, with what a real machine has and a
# debootstrapped one lacks: /etc/hosts, a resolver, a hostname.  Sets
# NEWROOT (not echoed: the mounts must be recorded in this shell).
new_root() {
	local r=$WORK/$1
	NEWROOT=$r
	mkdir -p "$r"
	tar -C "$r" --numeric-owner -xf "$TARBALL" || die "untar into $r"
	printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
	    >"$r/etc/hosts"
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	echo fresh >"$r/etc/hostname"
	for m in proc sys dev dev/pts dev/shm; do
		mkdir -p "$r/$m"
		case $m in
		proc) mount -t proc proc "$r/proc" ;;
		sys) mount -t sysfs sys "$r/sys" ;;
		dev/shm) mount -t tmpfs -o mode=1777 shm "$r/dev/shm" ;;
		*) mount --bind "/$m" "$r/$m" ;;
		esac || die "mount $r/$m"
		MOUNTED="$r/$m $MOUNTED"	# unmounted in reverse
	done
}

# Run a command chrooted in root $1 with a login-like environment, in its
# own process group (so it can be stopped whole by its pid).  exec: run in
# the background, the subshell's pid ($!) must become the group's leader.
in_root() {
	local r=$1; shift
	exec setsid chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
	    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	    /bin/sh -c "$*"
}

# Start $2 in root $1 in the background until /echo answers; stop it by
# pid.  $3 names the phase, $4 the log.
serve_until_echo() {
	local r=$1 cmd=$2 phase=$3 log=$4 t0=$SECONDS pid ok=0 i
	ports_free 8000 8001 >"$LOGS/ports.txt" 2>&1 ||
		{ result "$phase" FAIL 0 "$(cat "$LOGS/ports.txt")"; return 1; }
	(in_root "$r" "$cmd") >"$log" 2>&1 &
	pid=$!
	while [ $((SECONDS - t0)) -lt "$RUN_WAIT" ]; do
		if curl -sf -m 5 -d fresh localhost:8000/echo >"$LOGS/$phase-echo.json" 2>/dev/null
		then ok=1; break; fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 2
	done
	kill -TERM -- "-$pid" 2>/dev/null
	for i in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
	kill -KILL -- "-$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if [ $ok -eq 1 ]; then
		result "$phase" PASS $((SECONDS - t0)) "/echo answered: $(head -c 60 "$LOGS/$phase-echo.json")..."
	else
		result "$phase" FAIL $((SECONDS - t0)) "no answer from /echo; last: $(tail -n1 "$log")"
		tail -n 15 "$log"
		return 1
	fi
}

base_tarball
new_root root1
ROOT=$NEWROOT
git clone -q "$TOP" "$ROOT/src/ingressd" &&
    git -C "$ROOT/src/ingressd" checkout -q "$(git -C "$TOP" rev-parse HEAD)" ||
	die "git clone into the root"
say "root $ROOT, HEAD $(git -C "$TOP" rev-parse --short HEAD)"

if has run; then
	say "run: make run (until /echo answers, at most ${RUN_WAIT}s)"
	serve_until_echo "$ROOT" "cd /src/ingressd && exec make run" run \
	    "$LOGS/run.log"
fi

if has check; then
	say "check: make check (log $LOGS/check.log)"
	t0=$SECONDS
	(in_root "$ROOT" "cd /src/ingressd && timeout $CHECK_TIME make check") \
	    >"$LOGS/check.log" 2>&1
	rc=$?
	summ=$(grep -E '^(unit|python|integ): [0-9]+ passed|^conformance \(' \
	    "$LOGS/check.log" | tr '\n' ';')
	if [ $rc -eq 0 ]; then
		result check PASS $((SECONDS - t0)) "$summ"
	else
		result check FAIL $((SECONDS - t0)) "exit $rc; $summ"
		echo "---- check.log (last 30 lines)"; tail -n 30 "$LOGS/check.log"
	fi
fi

if has deb; then
	say "deb: dpkg-buildpackage in $ROOT (log $LOGS/deb-build.log)"
	t0=$SECONDS
	(in_root "$ROOT" "export DEBIAN_FRONTEND=noninteractive;
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	    dpkg-dev && cd /src/ingressd && apt-get build-dep -y -qq ./ &&
	    dpkg-buildpackage -us -uc -b") >"$LOGS/deb-build.log" 2>&1
	rc=$?
	debs=$(cd "$ROOT/src" && ls ./*.deb 2>/dev/null | tr '\n' ' ')
	if [ $rc -ne 0 ] || [ -z "$debs" ]; then
		result deb-build FAIL $((SECONDS - t0)) "exit $rc; $(tail -n1 "$LOGS/deb-build.log")"
		tail -n 20 "$LOGS/deb-build.log"
	else
		result deb-build PASS $((SECONDS - t0)) "$debs"
		new_root root2
		ROOT2=$NEWROOT
		cp "$ROOT"/src/*.deb "$ROOT2/tmp/"
		t0=$SECONDS
		(in_root "$ROOT2" "export DEBIAN_FRONTEND=noninteractive;
		    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d &&
		    chmod 755 /usr/sbin/policy-rc.d && apt-get update -qq &&
		    cd /tmp && apt-get install -y -qq ./ingressd_*.deb") \
		    >"$LOGS/deb-install.log" 2>&1
		rc=$?
		start=$(sed -n 's/^ExecStart=//p' \
		    "$ROOT2"/lib/systemd/system/ingressd.service "$ROOT2"/usr/lib/systemd/system/ingressd.service 2>/dev/null | head -n1)
		if [ $rc -ne 0 ] || [ -z "$start" ]; then
			result deb-install FAIL $((SECONDS - t0)) "exit $rc; $(tail -n1 "$LOGS/deb-install.log")"
		else
			result deb-install PASS $((SECONDS - t0)) "ExecStart=$start"
			# The unit's RuntimeDirectory= (systemd is not running here).
			serve_until_echo "$ROOT2" \
			    "mkdir -p /run/ingressd && RUNTIME_DIRECTORY=/run/ingressd exec $start" \
			    deb-run "$LOGS/deb-run.log"
		fi
	fi
fi

unmount_all
summary
[ "$FAILED" -eq 0 ]
