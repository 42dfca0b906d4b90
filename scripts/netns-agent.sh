#!/bin/sh
# OpenMPI launch agent for the emulated networks of scripts/netns.sh (--mca plm_rsh_agent):
# called as `netns-agent.sh HOST COMMAND...` where ssh would be, it runs COMMAND (OpenMPI's
# orted line, quoted for a remote shell) in the network namespace whose address is HOST, with
# the namespace's name as host name (a UTS namespace of its own): OpenMPI names its session
# directories after the host, and two daemons sharing one would share PMIx's shared-memory
# store and crash.
state_root=${MPICAST_NETNS_DIR:-/run/mpicast-netns}
host=$1
shift
ns=$(cat "$state_root"/*/hosts.map 2>/dev/null | awk -v h="$host" '$1 == h { print $2; exit }')
if [ -z "$ns" ]; then
  echo "netns-agent: $host: no such emulated host (scripts/netns.sh status)" >&2
  exit 255
fi
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$1" && shift && exec /bin/sh -c "$*"' netns-agent "$ns" "$*"
