#!/usr/bin/env bash
# Emulated networks for mpicast: the project's own test hosts as network namespaces on one
# machine, joined through a shaped private subnet, for `mpicast bench network` and
# `mpicast validate` (dPerf's stage 2 validated for real).
#
#   scripts/netns.sh up SCENARIO [HOSTS]   make HOSTS namespaces (default 2) on SCENARIO's subnet
#   scripts/netns.sh down [SCENARIO|all]   remove them (default all); safe to run twice
#   scripts/netns.sh status                what is up
#   scripts/netns.sh env SCENARIO          shell assignments for scripts: hosts, hostfile, mpirun options
#   scripts/netns.sh check                 exit 0 when namespaces can be made here, else 3 and why
#
# Scenarios (every frame a namespace sends: serialised at RATE, then DELAY one way; a message
# between two namespaces therefore takes DELAY + size / RATE plus the TCP/IP stack; the host side,
# where mpirun runs, is not shaped):
#   lan    100 Mbit/s, 0.1 ms   subnet 10.77.1.0/24   (switched Fast Ethernet)
#   xdsl    10 Mbit/s, 20 ms    subnet 10.77.2.0/24   (a DSL line each way, symmetric)
#   test     1 Gbit/s, 0.05 ms  subnet 10.77.9.0/24   (tests/validate.rs: the plumbing, quickly)
# Namespaces are mpicast-SCENARIO-K with eth0 = 10.77.S.(K+2); the host side is 10.77.S.1 on
# the interface mpicast-SCENARIO. Only addresses inside the subnet are shaped.
#
# Shaping: tc netem (delay and rate, limit 1000 packets) on each namespace's end of a veth pair
# whose other end is on a bridge. Kernels built without sch_netem (this project's VMs have only
# tbf and htb) get a delay line instead: a small switch program (its C source is below, built
# with cc into the state directory) that joins one TAP device per namespace and gives each
# frame the same serialisation time and delay, with netem's 1000-packet queue. Force one with
# MPICAST_NETNS_SHAPER=netem|delayline.
#
# mpirun reaches the namespaces through scripts/netns-agent.sh (OpenMPI's plm_rsh_agent: it runs
# `ip netns exec NS sh -c CMD` where ssh would log in), a hostfile with the namespace addresses,
# and the TCP transport confined to the subnet; `env` prints those options. Needs root.
# State: $MPICAST_NETNS_DIR (default /run/mpicast-netns).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state_root=${MPICAST_NETNS_DIR:-/run/mpicast-netns}

die() { echo "netns: $*" >&2; exit 2; }

scenario_params() {
  case $1 in
    lan) rate_bit_s=100000000; delay_us=100; net=1 ;;
    xdsl) rate_bit_s=10000000; delay_us=20000; net=2 ;;
    test) rate_bit_s=1000000000; delay_us=50; net=9 ;;
    *) die "unknown scenario '$1' (valid: lan, xdsl, test)" ;;
  esac
  subnet_prefix=10.77.$net
  subnet=$subnet_prefix.0/24
  host_if=mpicast-$1
  state=$state_root/$1
}

# Why namespaces cannot be made here (empty when they can).
why_not() {
  if [ "$(id -u)" != 0 ]; then echo "needs root (ip netns add)"; return; fi
  if ! command -v ip >/dev/null 2>&1; then echo "no ip command (install iproute2)"; return; fi
  if ! command -v tc >/dev/null 2>&1; then echo "no tc command (install iproute2)"; return; fi
  local probe=mpicast-probe-$$
  if ! ip netns add "$probe" 2>/dev/null; then echo "ip netns add fails (no network namespaces here)"; return; fi
  ip netns del "$probe" 2>/dev/null || true
}

# netem when the kernel has it, else the delay line.
pick_shaper() {
  case ${MPICAST_NETNS_SHAPER:-auto} in
    netem | delayline) echo "$MPICAST_NETNS_SHAPER"; return ;;
    auto) ;;
    *) die "MPICAST_NETNS_SHAPER=$MPICAST_NETNS_SHAPER: valid values are netem, delayline, auto" ;;
  esac
  local a=mpcprobe$$a b=mpcprobe$$b ok=delayline
  if ip link add "$a" type veth peer name "$b" 2>/dev/null; then
    if tc qdisc add dev "$a" root netem delay 1ms 2>/dev/null; then ok=netem; fi
    ip link del "$a" 2>/dev/null || true
  fi
  echo $ok
}

# The delay line's source; built on first use.
delayline_source() {
  cat <<'EOF'
/* mpicast delay line (scripts/netns.sh): an Ethernet switch between TAP devices, one per network
 * namespace, that gives every frame a shaped port sends its serialisation time at RATE and then
 * a fixed one-way DELAY, as tc netem "delay DELAY rate RATE limit LIMIT" would on a veth.
 * usage: delayline RATE_BIT_S DELAY_US LIMIT_PKTS NETNS:IFNAME[:free]...
 *   NETNS "-" is the namespace it starts in; ":free" ports are not shaped (mpirun's side).
 *   Prints "ready" once every TAP device exists; stops on SIGTERM (the devices go with it). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAXPORTS 16
#define SLOT 2048
#define MACS 256

struct frame {
    int64_t due_ns;
    uint32_t dests; /* bit mask of output ports */
    uint16_t len;
    unsigned char data[SLOT];
};

struct port {
    int fd;
    int shaped;
    int64_t busy_until_ns; /* end of the last frame's serialisation */
    struct frame *ring;
    unsigned head, count;
};

static struct port ports[MAXPORTS];
static int nports;
static unsigned limit;
static double ns_per_byte;
static int64_t delay_ns;
static unsigned char mac_addr[MACS][6];
static int mac_port[MACS];
static int nmacs;
static volatile sig_atomic_t stop;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void on_signal(int s) { (void)s; stop = 1; }

static int open_tap(const char *netns, const char *name, int home) {
    if (strcmp(netns, "-") != 0) {
        char path[256];
        snprintf(path, sizeof path, "/var/run/netns/%s", netns);
        int nfd = open(path, O_RDONLY | O_CLOEXEC);
        if (nfd < 0 || setns(nfd, CLONE_NEWNET) != 0) {
            fprintf(stderr, "delayline: %s: cannot enter the namespace: %s\n", netns, strerror(errno));
            exit(2);
        }
        close(nfd);
    }
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "delayline: /dev/net/tun: %s\n", strerror(errno));
        exit(2);
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
        fprintf(stderr, "delayline: %s:%s: cannot create the TAP device: %s\n", netns, name, strerror(errno));
        exit(2);
    }
    /* The device stays in the namespace it was made in; the process goes back. */
    if (setns(home, CLONE_NEWNET) != 0) {
        fprintf(stderr, "delayline: cannot return to the first namespace: %s\n", strerror(errno));
        exit(2);
    }
    return fd;
}

static int lookup(const unsigned char *mac) {
    for (int i = 0; i < nmacs; i++)
        if (memcmp(mac_addr[i], mac, 6) == 0) return mac_port[i];
    return -1;
}

static void learn(const unsigned char *mac, int p) {
    if (mac[0] & 1) return;
    for (int i = 0; i < nmacs; i++)
        if (memcmp(mac_addr[i], mac, 6) == 0) {
            mac_port[i] = p;
            return;
        }
    if (nmacs < MACS) {
        memcpy(mac_addr[nmacs], mac, 6);
        mac_port[nmacs++] = p;
    }
}

/* Reads every waiting frame of port p into its queue. */
static void take(int p) {
    struct port *in = &ports[p];
    for (;;) {
        unsigned char buf[SLOT];
        ssize_t n = read(in->fd, buf, sizeof buf);
        if (n <= 0) return;
        if (n < 14) continue;
        learn(buf + 6, p);
        uint32_t dests;
        int to = (buf[0] & 1) ? -1 : lookup(buf);
        if (to < 0)
            dests = ((1u << nports) - 1) & ~(1u << p);
        else if (to == p)
            continue;
        else
            dests = 1u << to;
        if (in->count >= limit) continue; /* queue full: dropped, as netem's limit does */
        int64_t t = now_ns();
        int64_t due = t;
        if (in->shaped) {
            int64_t start = in->busy_until_ns > t ? in->busy_until_ns : t;
            in->busy_until_ns = start + (int64_t)(ns_per_byte * (double)n);
            due = in->busy_until_ns + delay_ns;
        }
        struct frame *f = &in->ring[(in->head + in->count) % limit];
        f->due_ns = due;
        f->dests = dests;
        f->len = (uint16_t)n;
        memcpy(f->data, buf, (size_t)n);
        in->count++;
    }
}

/* Sends the frames that are due; returns when the next one is (-1: none waiting). A port's
 * frames are due in the order they came (one rate, one delay), so each queue is a FIFO. */
static int64_t deliver(void) {
    int64_t next = -1, t = now_ns();
    for (int p = 0; p < nports; p++) {
        struct port *in = &ports[p];
        while (in->count > 0) {
            struct frame *f = &in->ring[in->head];
            if (f->due_ns > t) {
                if (next < 0 || f->due_ns < next) next = f->due_ns;
                break;
            }
            for (int q = 0; q < nports; q++)
                if (f->dests & (1u << q)) {
                    ssize_t w = write(ports[q].fd, f->data, f->len);
                    (void)w; /* a full TAP queue drops the frame, as a wire would */
                }
            in->head = (in->head + 1) % limit;
            in->count--;
        }
    }
    return next;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: delayline RATE_BIT_S DELAY_US LIMIT_PKTS NETNS:IFNAME[:free]...\n");
        return 2;
    }
    double rate = atof(argv[1]);
    delay_ns = (int64_t)(atof(argv[2]) * 1000.0);
    limit = (unsigned)atoi(argv[3]);
    if (!(rate > 0) || delay_ns < 0 || limit < 1 || argc - 4 > MAXPORTS) {
        fprintf(stderr, "delayline: bad rate, delay or limit, or more than %d ports\n", MAXPORTS);
        return 2;
    }
    ns_per_byte = 8e9 / rate;
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0) {
        perror("delayline: /proc/self/ns/net");
        return 2;
    }
    for (int i = 4; i < argc; i++) {
        char spec[256];
        snprintf(spec, sizeof spec, "%s", argv[i]);
        char *ns = strtok(spec, ":"), *ifn = strtok(NULL, ":"), *opt = strtok(NULL, ":");
        if (!ns || !ifn) {
            fprintf(stderr, "delayline: %s: expected NETNS:IFNAME\n", argv[i]);
            return 2;
        }
        struct port *p = &ports[nports++];
        p->fd = open_tap(ns, ifn, home);
        p->shaped = !(opt && strcmp(opt, "free") == 0);
        p->ring = calloc(limit, sizeof(struct frame));
        if (!p->ring) {
            fprintf(stderr, "delayline: out of memory\n");
            return 2;
        }
    }
    prctl(PR_SET_TIMERSLACK, 1000UL); /* 1 us: the default 50 us would blur a 0.1 ms delay */
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGHUP, SIG_IGN);
    printf("ready\n");
    fflush(stdout);
    struct pollfd pf[MAXPORTS];
    for (int p = 0; p < nports; p++) {
        pf[p].fd = ports[p].fd;
        pf[p].events = POLLIN;
    }
    while (!stop) {
        int64_t next = deliver();
        struct timespec ts, *tp = NULL;
        if (next >= 0) {
            int64_t wait = next - now_ns();
            if (wait < 0) wait = 0;
            ts.tv_sec = wait / 1000000000;
            ts.tv_nsec = wait % 1000000000;
            tp = &ts;
        }
        int r = ppoll(pf, (nfds_t)nports, tp, NULL);
        if (r < 0 && errno != EINTR) {
            perror("delayline: ppoll");
            return 1;
        }
        for (int p = 0; p < nports && r > 0; p++)
            if (pf[p].revents & POLLIN) take(p);
    }
    return 0;
}
EOF
}

build_delayline() {
  local src=$state_root/delayline.c bin=$state_root/delayline
  mkdir -p "$state_root"
  if [ -x "$bin" ] && [ -f "$src" ] && delayline_source | cmp -s - "$src"; then return; fi
  delayline_source >"$src"
  local cc=${CC:-cc}
  command -v "$cc" >/dev/null 2>&1 || cc=gcc
  "$cc" -O2 -Wall -o "$bin.tmp" "$src" || die "cannot build the delay line ($src) with $cc"
  mv "$bin.tmp" "$bin"
}

is_up() { [ -f "$state_root/$1/hosts.map" ]; }

cmd_up() {
  local sc=${1:-} hosts=${2:-2}
  [ -n "$sc" ] || die "usage: netns.sh up lan|xdsl [HOSTS]"
  scenario_params "$sc"
  case $hosts in '' | *[!0-9]*) die "HOSTS '$hosts': expected a number from 1 to 8" ;; esac
  [ "$hosts" -ge 1 ] && [ "$hosts" -le 8 ] || die "HOSTS $hosts: expected a number from 1 to 8"
  local why; why=$(why_not)
  [ -z "$why" ] || { echo "netns: cannot make namespaces here: $why" >&2; exit 3; }
  if is_up "$sc"; then
    echo "netns: $sc is already up ($(cut -d' ' -f1 "$state/hosts.map" | paste -sd, -))"
    return
  fi
  if [ -n "$(ip -4 route show to "$subnet" 2>/dev/null)" ] || ip link show "$host_if" >/dev/null 2>&1; then
    die "$subnet or $host_if is already in use here (a half-made $sc? run: netns.sh down $sc)"
  fi
  local shaper; shaper=$(pick_shaper)
  mkdir -p "$state"
  # Anything that fails from here on (set -e, die) takes down what was made.
  trap "echo 'netns: up $sc failed; cleaning up' >&2; cmd_down $sc >/dev/null 2>&1 || true" EXIT
  local k ns
  for ((k = 0; k < hosts; k++)); do
    ns=mpicast-$sc-$k
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    echo "$subnet_prefix.$((k + 2)) $ns" >>"$state/hosts.map.tmp"
  done
  if [ "$shaper" = netem ]; then
    ip link add "$host_if" type bridge
    ip link set "$host_if" up
    for ((k = 0; k < hosts; k++)); do
      ns=mpicast-$sc-$k
      ip link add "mpc-$sc-$k" type veth peer name eth0 netns "$ns"
      ip link set "mpc-$sc-$k" master "$host_if" up
      ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "${delay_us}us" rate "${rate_bit_s}bit" limit 1000
    done
  else
    build_delayline
    local ports=("-:$host_if:free")
    for ((k = 0; k < hosts; k++)); do ports+=("mpicast-$sc-$k:eth0"); done
    setsid "$state_root/delayline" "$rate_bit_s" "$delay_us" 1000 "${ports[@]}" \
      >"$state/delayline.out" 2>"$state/delayline.err" </dev/null &
    echo $! >"$state/delayline.pid"
    local waited=0
    until grep -q ready "$state/delayline.out" 2>/dev/null; do
      if ! kill -0 "$(cat "$state/delayline.pid")" 2>/dev/null || [ $waited -ge 50 ]; then
        echo "netns: the delay line did not start: $(cat "$state/delayline.err")" >&2
        false
      fi
      sleep 0.1
      waited=$((waited + 1))
    done
    ip link set "$host_if" up
  fi
  ip addr add "$subnet_prefix.1/24" dev "$host_if"
  for ((k = 0; k < hosts; k++)); do
    ns=mpicast-$sc-$k
    ip -n "$ns" addr add "$subnet_prefix.$((k + 2))/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  : >"$state/hostfile"
  while read -r addr _; do echo "$addr slots=2" >>"$state/hostfile"; done <"$state/hosts.map.tmp"
  cat >"$state/params" <<EOF
scenario=$sc
shaper=$shaper
rate_bit_s=$rate_bit_s
delay_us=$delay_us
subnet=$subnet
hosts=$hosts
EOF
  mv "$state/hosts.map.tmp" "$state/hosts.map"
  trap - EXIT
  echo "netns: $sc up: $hosts namespaces on $subnet, $((rate_bit_s / 1000000)) Mbit/s and $(awk "BEGIN{print $delay_us/1000}") ms one way ($shaper)"
}

cmd_down() {
  local which=${1:-all} sc scs=()
  if [ "$which" = all ]; then scs=(lan xdsl test); else scenario_params "$which"; scs=("$which"); fi
  for sc in "${scs[@]}"; do
    scenario_params "$sc"
    local did=0
    if [ -f "$state/delayline.pid" ]; then
      local pid; pid=$(cat "$state/delayline.pid")
      # Only our delay line, never a process that reused the id.
      if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "delayline"; then
        kill "$pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      fi
      did=1
    fi
    local ns
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^mpicast-$sc-[0-9]*$" || true); do
      ip netns del "$ns" 2>/dev/null || true
      did=1
    done
    if ip link show "$host_if" >/dev/null 2>&1; then
      ip link del "$host_if" 2>/dev/null || true
      did=1
    fi
    if [ -d "$state" ]; then rm -rf "$state"; did=1; fi
    if [ $did = 1 ]; then echo "netns: $sc down"; fi
  done
}

cmd_status() {
  local sc any=0
  for sc in lan xdsl test; do
    scenario_params "$sc"
    if is_up "$sc"; then
      any=1
      # shellcheck disable=SC1091
      . "$state/params"
      echo "$sc: up, $((rate_bit_s / 1000000)) Mbit/s, $(awk "BEGIN{print $delay_us/1000}") ms one way, $shaper, subnet $subnet, host side $host_if"
      while read -r addr ns; do echo "  $ns $addr"; done <"$state/hosts.map"
    fi
  done
  [ $any = 1 ] || echo "no emulated network is up"
}

cmd_env() {
  local sc=${1:-}
  [ -n "$sc" ] || die "usage: netns.sh env lan|xdsl"
  scenario_params "$sc"
  is_up "$sc" || die "$sc is not up (netns.sh up $sc)"
  # shellcheck disable=SC1091
  . "$state/params"
  echo "NETNS_SCENARIO=$sc"
  echo "NETNS_SHAPER=$shaper"
  echo "NETNS_RATE_BIT_S=$rate_bit_s"
  echo "NETNS_DELAY_US=$delay_us"
  echo "NETNS_SUBNET=$subnet"
  echo "NETNS_HOSTS=$(cut -d' ' -f1 "$state/hosts.map" | paste -sd, -)"
  echo "NETNS_HOST_COUNT=$hosts"
  echo "NETNS_HOSTFILE=$state/hostfile"
  echo "NETNS_MPIRUN_ARGS='--mca plm_rsh_agent $here/netns-agent.sh --mca btl tcp,self --mca btl_tcp_if_include $subnet --mca oob_tcp_if_include $subnet'"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  status) cmd_status ;;
  env) shift; cmd_env "$@" ;;
  check)
    why=$(why_not)
    if [ -n "$why" ]; then echo "netns: cannot make namespaces here: $why" >&2; exit 3; fi
    echo "netns: namespaces can be made here (shaper: $(pick_shaper))"
    ;;
  *) die "usage: netns.sh up SCENARIO [HOSTS] | down [SCENARIO|all] | status | env SCENARIO | check (scenarios: lan, xdsl, test)" ;;
esac
