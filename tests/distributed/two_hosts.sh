#!/bin/sh
# Two "hosts" on one machine: network namespaces ctA and ctB joined by a veth
# pair (10.77.0.1 and 10.77.0.2, nothing else), one rank in each. Rank 0
# serves the store on 10.77.0.1; Gloo binds the veth (GLOO_SOCKET_IFNAME, as
# across real machines). Runs test_distributed's collectives and DDP cases,
# so nothing may assume loopback or one host; then a wrong interface, which
# must fail cleanly on both ranks.
#   tests/distributed/two_hosts.sh build/tests/test_distributed
# Needs root and network namespaces; exits 77 (skipped) without them.
set -u
bin=$(readlink -f "$1")
"$bin" --rank 0 --world 1 --port 1 --case compiled
[ $? -eq 0 ] || { echo "SKIP: this libctorch has no Gloo backend (c10d with Gloo)"; exit 77; }
A=ctA$$ B=ctB$$
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; }
trap cleanup EXIT
if ! ip netns add "$A" 2>/dev/null; then echo "SKIP: cannot make network namespaces"; exit 77; fi
ip netns add "$B" || exit 77
ip link add vA netns "$A" type veth peer name vB netns "$B" || { echo "SKIP: no veth"; exit 77; }
ip -n "$A" addr add 10.77.0.1/24 dev vA && ip -n "$A" link set vA up && ip -n "$A" link set lo up
ip -n "$B" addr add 10.77.0.2/24 dev vB && ip -n "$B" link set vB up && ip -n "$B" link set lo up
status=0
for case in collectives ddp; do
  port=$((20000 + $$ % 20000))
  CTORCH_TEST_MASTER_ADDR=10.77.0.1 GLOO_SOCKET_IFNAME=vA timeout 120 \
    ip netns exec "$A" "$bin" --rank 0 --world 2 --port $port --case $case 2>/tmp/two_hosts_a.$$ &
  pa=$!
  CTORCH_TEST_MASTER_ADDR=10.77.0.1 GLOO_SOCKET_IFNAME=vB timeout 120 \
    ip netns exec "$B" "$bin" --rank 1 --world 2 --port $port --case $case 2>/tmp/two_hosts_b.$$
  rb=$?
  wait $pa
  ra=$?
  if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then
    echo "two hosts, case $case: rank 0 exit $ra, rank 1 exit $rb"
    grep -v socket.cpp /tmp/two_hosts_a.$$ /tmp/two_hosts_b.$$ | tail -20
    status=1
  else
    echo "two hosts, case $case: passed (10.77.0.1 <-> 10.77.0.2)"
  fi
  rm -f /tmp/two_hosts_a.$$ /tmp/two_hosts_b.$$
done
# A wrong interface: Gloo advertises loopback, which the other host cannot
# reach. Both ranks must fail cleanly (exit 1, not a hang or a crash) within
# the group's timeout (20 s) and ctorch's margin.
port=$((20000 + ($$ + 7) % 20000))
CTORCH_TEST_MASTER_ADDR=10.77.0.1 GLOO_SOCKET_IFNAME=lo timeout 90 \
  ip netns exec "$A" "$bin" --rank 0 --world 2 --port $port --case ddp 2>/tmp/two_hosts_a.$$ &
pa=$!
CTORCH_TEST_MASTER_ADDR=10.77.0.1 GLOO_SOCKET_IFNAME=lo timeout 90 \
  ip netns exec "$B" "$bin" --rank 1 --world 2 --port $port --case ddp 2>/tmp/two_hosts_b.$$
rb=$?
wait $pa
ra=$?
if [ $ra -eq 1 ] && [ $rb -eq 1 ]; then
  echo "two hosts, wrong interface: both ranks failed cleanly"
else
  echo "two hosts, wrong interface: rank 0 exit $ra, rank 1 exit $rb (expected 1 and 1)"
  grep -v socket.cpp /tmp/two_hosts_a.$$ /tmp/two_hosts_b.$$ | tail -20
  status=1
fi
rm -f /tmp/two_hosts_a.$$ /tmp/two_hosts_b.$$
exit $status
