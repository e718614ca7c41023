#!/usr/bin/env bash
# The real testbed: hosts as network namespaces joined through router namespaces by veth
# pairs, with tc setting link rates and the bottleneck queue. Used by the eqdsd tests and
# usable by hand. Needs root, iproute2 (ip, tc); the tests also use iperf3 and ping.
#
# Topology and addressing (every namespace is named PREFIX-..., nothing is created in the
# root namespace, and all addresses exist only inside the namespaces):
#
#   --paths 1:  hI ---- r1 ---- hJ          (star: every host hangs off router r1)
#     host I:  namespace P-hI, interface eth0, 10.77.I.1/24, default route via 10.77.I.254
#     r1:      namespace P-r1, interface hI towards host I, 10.77.I.254/24
#
#   --paths 2:  h1..hK --- left ===(r1, r2)=== right --- hK+1..hN   (K = ceil(N/2))
#     hosts:   as above, but host I's gateway 10.77.I.254 lives on its leaf (P-left or
#              P-right, interface hI)
#     links:   left-r1 10.77.201.0/24, left-r2 10.77.202.0/24,
#              r1-right 10.77.203.0/24, r2-right 10.77.204.0/24 (leaf side .1, router .2)
#     leaves:  route the far side's host subnets over both routers,
#              "nexthop via <r1> nexthop via <r2>", with fib_multipath_hash_policy=1
#              (L4 hash: flows with different ports may take different paths)
#
# Each host owns a /24 (10.77.I.0/24, I = 1..199), so per-host routes and counters are
# unambiguous and hosts may be added without renumbering.
#
# tc: on every router/leaf interface's egress, an htb class with the rate (--rate; for
# the leaf->host links of --paths 2, --host-rate, default --rate) and a "pfifo limit
# QUEUE" child: the bottleneck queue, counted in packets. With --paths 1 these are the
# router's links towards each host; with --paths 2 every link in both directions except
# the hosts' own uplinks. Host uplinks (host egress) are unshaped. gso_max_segs is 1 on
# every testbed interface so that hosts send MTU-sized packets and the queue limit counts
# real packets, not 64 KB GSO aggregates. --delay D adds netem delay D on every host's
# egress (so a host-to-host RTT grows by 2D); it needs the kernel's sch_netem.
#
# --switch eqds: the routers and leaves run eqds-switch (crates/eqds-switch, a user-space
# switch with the simulator's queue disciplines) instead of kernel forwarding and tc:
# ip_forward is 0 in their namespaces, each gets /run/PREFIX-NS-switch.toml with a port
# per interface (the same rates as above) and the queue --discipline (a TOML inline
# table in the simulator's syntax; default a drop-tail of --queue packets), and its log
# and pid go to /run/PREFIX-NS-switch.{log,pid}. Its metrics are on 127.0.0.1:9600
# inside its namespace. --eqds-port names the UDP port eqdsd listens on (what a
# trimming discipline may cut). The binary is $EQDS_SWITCH, else target/release's.
#
# The summary (namespaces, interfaces, addresses) is printed and written as JSON to
# /run/PREFIX-testbed.json.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: testbed.sh up --hosts N [--rate 500mbit] [--queue 15] [--delay 0ms] [--paths 1|2]
                     [--host-rate RATE] [--prefix eqtb] [--switch kernel|eqds]
                     [--discipline TOML] [--eqds-port PORT]
       testbed.sh down [--prefix eqtb]
       testbed.sh exec [--prefix eqtb] HOSTINDEX CMD [ARGS...]

  up      (re)create the testbed: first runs "down" for the same prefix
  down    delete every namespace (and its veths) with the prefix; never fails if none exist
  exec    run CMD inside host namespace PREFIX-hHOSTINDEX

  --hosts N        number of hosts (1..199)
  --rate R         link rate for tc (tc units: 200mbit, 1gbit, ...), default 500mbit
  --queue Q        bottleneck queue in packets (pfifo limit), default 15
  --delay D        one-way netem delay on each host's egress (us/ms/s), default 0ms
  --paths P        1: one router; 2: two parallel routers between two leaves, default 1
  --host-rate R    with --paths 2, the rate of the leaf->host links (default: --rate)
  --prefix P       name prefix of everything created, default eqtb ([A-Za-z][A-Za-z0-9_]*)
  --switch S       kernel: Linux forwarding and tc (default); eqds: eqds-switch
  --discipline Q   with --switch eqds, every port's queue as a TOML inline table, e.g.
                   '{ kind = "trimming", data_packets = 8, return_to_sender = false }'
                   (default '{ kind = "drop_tail", limit_packets = QUEUE }')
  --eqds-port P    with --switch eqds, the UDP port EQDS tunnels listen on (default 7700)
EOF
}

die() {
    echo "testbed.sh: $*" >&2
    exit 1
}

# Runs a command, and names it if it fails.
run() {
    local out
    if ! out=$("$@" 2>&1); then
        die "failed: $* ${out:+($out)}"
    fi
}

# Runs a command inside namespace $1.
nsrun() {
    local ns=$1
    shift
    run ip netns exec "$ns" "$@"
}

check_prefix() {
    [[ $1 =~ ^[A-Za-z][A-Za-z0-9_]{0,31}$ ]] ||
        die "bad --prefix '$1' (want [A-Za-z][A-Za-z0-9_]*, at most 32 characters)"
}

# The testbed namespaces of prefix $1 (only names the testbed itself would create).
prefix_namespaces() {
    local prefix=$1 name
    ip netns list 2>/dev/null | while read -r name _; do
        if [[ $name =~ ^${prefix}-(h[0-9]+|r[12]|left|right)$ ]]; then
            echo "$name"
        fi
    done
}

cmd_down() {
    local prefix=$1 ns pid link
    for ns in $(prefix_namespaces "$prefix"); do
        # Processes left inside (servers, daemons) would keep the namespace alive.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
        ip netns delete "$ns" 2>/dev/null || true
    done
    # The testbed makes no links in the root namespace; remove any a crashed run left.
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
        if [[ $link == "$prefix"-* ]]; then
            ip link delete "$link" 2>/dev/null || true
        fi
    done
    rm -f "/run/$prefix-testbed.json" "/run/$prefix"-*-switch.*
    local left
    left=$(prefix_namespaces "$prefix")
    [[ -z $left ]] || die "could not delete namespaces: $left"
}

# Creates namespace $1 with loopback up, no IPv6 and forwarding set to $2.
make_ns() {
    local ns=$1 forward=$2
    run ip netns add "$ns"
    nsrun "$ns" ip link set lo up
    nsrun "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    nsrun "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
    nsrun "$ns" sysctl -qw net.ipv4.ip_forward="$forward"
    nsrun "$ns" sysctl -qw net.ipv4.conf.all.rp_filter=0
    nsrun "$ns" sysctl -qw net.ipv4.conf.default.rp_filter=0
}

# veth between namespace $1 (interface $2, address $3) and namespace $4 (interface $5,
# address $6); addresses are CIDR.
make_link() {
    local ns1=$1 if1=$2 addr1=$3 ns2=$4 if2=$5 addr2=$6
    run ip link add "$if1" netns "$ns1" type veth peer name "$if2" netns "$ns2"
    nsrun "$ns1" ip link set dev "$if1" gso_max_segs 1
    nsrun "$ns2" ip link set dev "$if2" gso_max_segs 1
    nsrun "$ns1" ip addr add "$addr1" dev "$if1"
    nsrun "$ns2" ip addr add "$addr2" dev "$if2"
    nsrun "$ns1" ip link set dev "$if1" up
    nsrun "$ns2" ip link set dev "$if2" up
}

# Egress shaping of interface $2 in namespace $1: rate $3, a pfifo of $4 packets.
shape() {
    local ns=$1 dev=$2 rate=$3 queue=$4
    nsrun "$ns" tc qdisc replace dev "$dev" root handle 1: htb default 1
    # tc's default burst is rate/HZ, below one full packet at these rates: htb then
    # needs a timer wakeup per packet and cannot reach the rate (plain TCP got 313
    # Mbit/s through a 1gbit class). Two full packets of burst keep it exact.
    nsrun "$ns" tc class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" \
        burst 3028 cburst 3028 quantum 1514
    nsrun "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: pfifo limit "$queue"
}

# eqds-switch configuration being built for one namespace (see switch_* below).
SW_PORTS=""
SW_ROUTES=""

# Starts a configuration: switch-wide keys.
switch_begin() {
    local eqds_port=$1
    SW_PORTS="[switch]
eqds_ports = [$eqds_port]
metrics = \"127.0.0.1:9600\"
"
    SW_ROUTES=""
}

# A port: name $1 (the interface), tc-style rate $2, discipline $3.
switch_port() {
    local name=$1 rate=$2 discipline=$3
    SW_PORTS+="
[[port]]
name = \"$name\"
rate = \"$(tc_rate_to_config "$rate")\"
queue = $discipline
"
}

# A route: prefix $1, then next hops as PORT=VIA pairs.
switch_route() {
    local prefix=$1 hop sep=""
    shift
    SW_ROUTES+="
[[route]]
prefix = \"$prefix\"
next_hops = ["
    for hop in "$@"; do
        SW_ROUTES+="$sep{ port = \"${hop%%=*}\", via = \"${hop#*=}\" }"
        sep=", "
    done
    SW_ROUTES+="]
"
}

# tc's rate spelling (500mbit, 1gbit, 1.5gbit) in the configuration's (500Mbps, 1Gbps).
tc_rate_to_config() {
    local r=$1 num unit
    num=${r%%[kmgtKMGT]*}
    num=${num%bit}
    num=${num%bps}
    unit=${r#"$num"}
    case $unit in
    kbit) echo "${num}Kbps" ;; mbit) echo "${num}Mbps" ;; gbit) echo "${num}Gbps" ;;
    tbit) echo "${num}Tbps" ;; bit) echo "${num}bps" ;;
    kbps) echo "$((${num%.*} * 8))Kbps" ;; mbps) echo "$((${num%.*} * 8))Mbps" ;;
    gbps) echo "$((${num%.*} * 8))Gbps" ;; bps) echo "$((${num%.*} * 8))bps" ;;
    *) die "cannot convert rate '$r'" ;;
    esac
}

# Writes the configuration for namespace $1 and starts eqds-switch there.
switch_start() {
    local ns=$1 bin conf="/run/$1-switch.toml"
    bin=${EQDS_SWITCH:-$(dirname "$0")/../target/release/eqds-switch}
    [[ -x $bin ]] || die "no eqds-switch binary at $bin (cargo build --release -p eqds-switch)"
    printf '%s%s' "$SW_PORTS" "$SW_ROUTES" >"$conf"
    "$bin" --config "$conf" --check >/dev/null 2>"/run/$ns-switch.log" ||
        die "$conf: $(cat "/run/$ns-switch.log")"
    # SCHED_FIFO above the daemons' (10): a switch is hardware of its own, and a
    # switch that waits for a core loses its ports' rate (docs/eqds-switch.md).
    ip netns exec "$ns" chrt -f 20 "$bin" --config "$conf" >"/run/$ns-switch.out" \
        2>"/run/$ns-switch.log" &
    echo $! >"/run/$ns-switch.pid"
}

# Waits until every switch started has resolved its next hops (its ARP cache is as
# large as the routes' gateways) or says why it stopped.
switch_wait() {
    local ns i
    for ns in "$@"; do
        for ((i = 0; i < 100; i++)); do
            if ! kill -0 "$(cat "/run/$ns-switch.pid")" 2>/dev/null; then
                die "eqds-switch in $ns stopped: $(cat "/run/$ns-switch.log")"
            fi
            grep -q "metrics addr" "/run/$ns-switch.log" && break
            sleep 0.05
        done
    done
}

cmd_up() {
    local prefix=$1 hosts=$2 rate=$3 queue=$4 delay=$5 paths=$6 host_rate=$7
    local switch=$8 discipline=$9 eqds_port=${10}
    [[ $switch == kernel || $switch == eqds ]] || die "bad --switch '$switch' (kernel or eqds)"
    [[ $eqds_port =~ ^[0-9]{1,5}$ ]] && ((eqds_port >= 1 && eqds_port <= 65535)) ||
        die "bad --eqds-port '$eqds_port' (1..65535)"
    if ! [[ $hosts =~ ^[0-9]{1,3}$ ]] || ((10#$hosts < 1 || 10#$hosts > 199)); then
        die "bad --hosts '$hosts' (want 1..199)"
    fi
    hosts=$((10#$hosts))
    [[ $rate =~ ^[0-9]+(\.[0-9]+)?[kmgt]?(bit|bps)$ ]] || die "bad --rate '$rate' (e.g. 500mbit)"
    [[ $host_rate =~ ^[0-9]+(\.[0-9]+)?[kmgt]?(bit|bps)$ ]] ||
        die "bad --host-rate '$host_rate' (e.g. 1gbit)"
    if ! [[ $queue =~ ^[0-9]{1,6}$ ]] || ((10#$queue < 1)); then
        die "bad --queue '$queue' (want packets, 1..999999)"
    fi
    queue=$((10#$queue))
    [[ -n $discipline ]] || discipline="{ kind = \"drop_tail\", limit_packets = $queue }"
    local fwd=1
    [[ $switch == eqds ]] && fwd=0
    [[ $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || die "bad --delay '$delay' (e.g. 0ms, 500us)"
    [[ $paths == 1 || $paths == 2 ]] || die "bad --paths '$paths' (want 1 or 2)"
    local use_delay=1
    [[ $delay =~ ^0+(\.0+)?(us|ms|s)$ ]] && use_delay=0

    cmd_down "$prefix"
    # On any failure past this point, leave nothing half-built behind.
    trap 'cmd_down "$prefix" >/dev/null 2>&1 || true' EXIT

    local r1="$prefix-r1" r2="$prefix-r2" left="$prefix-left" right="$prefix-right"
    local i ns gw_ns half=$(((hosts + 1) / 2))
    if [[ $paths == 1 ]]; then
        make_ns "$r1" $fwd
    else
        make_ns "$left" $fwd
        make_ns "$right" $fwd
        make_ns "$r1" $fwd
        make_ns "$r2" $fwd
        nsrun "$left" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
        nsrun "$right" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
        make_link "$left" r1 10.77.201.1/24 "$r1" left 10.77.201.2/24
        make_link "$left" r2 10.77.202.1/24 "$r2" left 10.77.202.2/24
        make_link "$right" r1 10.77.203.1/24 "$r1" right 10.77.203.2/24
        make_link "$right" r2 10.77.204.1/24 "$r2" right 10.77.204.2/24
        local dev
        if [[ $switch == kernel ]]; then
            for ns in "$left" "$right"; do
                for dev in r1 r2; do shape "$ns" "$dev" "$rate" "$queue"; done
            done
            for ns in "$r1" "$r2"; do
                for dev in left right; do shape "$ns" "$dev" "$rate" "$queue"; done
            done
        fi
    fi

    for ((i = 1; i <= hosts; i++)); do
        ns="$prefix-h$i"
        make_ns "$ns" 0
        if [[ $paths == 1 ]]; then
            gw_ns=$r1
        elif ((i <= half)); then
            gw_ns=$left
        else
            gw_ns=$right
        fi
        make_link "$ns" eth0 "10.77.$i.1/24" "$gw_ns" "h$i" "10.77.$i.254/24"
        nsrun "$ns" ip route add default via "10.77.$i.254"
        if [[ $switch == eqds ]]; then
            : # eqds-switch paces and queues: configured below
        elif [[ $paths == 1 ]]; then
            shape "$gw_ns" "h$i" "$rate" "$queue"
        else
            shape "$gw_ns" "h$i" "$host_rate" "$queue"
        fi
        if [[ $paths == 2 && $switch == kernel ]]; then
            # Routers reach each host through its leaf; the far leaf over both routers.
            if ((i <= half)); then
                nsrun "$r1" ip route add "10.77.$i.0/24" via 10.77.201.1
                nsrun "$r2" ip route add "10.77.$i.0/24" via 10.77.202.1
                nsrun "$right" ip route add "10.77.$i.0/24" \
                    nexthop via 10.77.203.2 nexthop via 10.77.204.2
            else
                nsrun "$r1" ip route add "10.77.$i.0/24" via 10.77.203.1
                nsrun "$r2" ip route add "10.77.$i.0/24" via 10.77.204.1
                nsrun "$left" ip route add "10.77.$i.0/24" \
                    nexthop via 10.77.201.2 nexthop via 10.77.202.2
            fi
        fi
        if ((use_delay)); then
            ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" limit 100000 \
                2>/dev/null || die "netem delay on $ns eth0 failed (is sch_netem in the kernel?)"
        fi
    done

    if [[ $switch == eqds ]]; then
        start_switches "$prefix" "$hosts" "$rate" "$paths" "$host_rate" "$half" \
            "$discipline" "$eqds_port"
    fi

    write_summary "$prefix" "$hosts" "$rate" "$queue" "$delay" "$paths" "$host_rate" "$half" \
        "$switch"
    trap - EXIT
}

# The eqds-switch counterpart of the kernel's routes and tc above: one switch per
# router and leaf namespace, the same rates, routes and multipath.
start_switches() {
    local prefix=$1 hosts=$2 rate=$3 paths=$4 host_rate=$5 half=$6 discipline=$7 eqds_port=$8
    local i ns started=()
    if [[ $paths == 1 ]]; then
        ns="$prefix-r1"
        switch_begin "$eqds_port"
        for ((i = 1; i <= hosts; i++)); do
            switch_port "h$i" "$rate" "$discipline"
            switch_route "10.77.$i.0/24" "h$i=10.77.$i.1"
        done
        switch_start "$ns"
        started+=("$ns")
    else
        local side
        for side in left right; do
            ns="$prefix-$side"
            switch_begin "$eqds_port"
            switch_port r1 "$rate" "$discipline"
            switch_port r2 "$rate" "$discipline"
            for ((i = 1; i <= hosts; i++)); do
                if { ((i <= half)) && [[ $side == left ]]; } || { ((i > half)) && [[ $side == right ]]; }; then
                    switch_port "h$i" "$host_rate" "$discipline"
                    switch_route "10.77.$i.0/24" "h$i=10.77.$i.1"
                elif [[ $side == left ]]; then
                    switch_route "10.77.$i.0/24" "r1=10.77.201.2" "r2=10.77.202.2"
                else
                    switch_route "10.77.$i.0/24" "r1=10.77.203.2" "r2=10.77.204.2"
                fi
            done
            switch_start "$ns"
            started+=("$ns")
        done
        local r n
        for r in 1 2; do
            ns="$prefix-r$r"
            switch_begin "$eqds_port"
            switch_port left "$rate" "$discipline"
            switch_port right "$rate" "$discipline"
            for ((i = 1; i <= hosts; i++)); do
                if ((i <= half)); then
                    n=$((200 + r))
                    switch_route "10.77.$i.0/24" "left=10.77.$n.1"
                else
                    n=$((202 + r))
                    switch_route "10.77.$i.0/24" "right=10.77.$n.1"
                fi
            done
            switch_start "$ns"
            started+=("$ns")
        done
    fi
    switch_wait "${started[@]}"
}

write_summary() {
    local prefix=$1 hosts=$2 rate=$3 queue=$4 delay=$5 paths=$6 host_rate=$7 half=$8 switch=$9
    local json="/run/$prefix-testbed.json" i gw side sep=""
    {
        printf '{\n  "prefix": "%s",\n  "paths": %s,\n  "rate": "%s",\n' "$prefix" "$paths" "$rate"
        printf '  "switch": "%s",\n' "$switch"
        printf '  "host_rate": "%s",\n  "queue_packets": %s,\n  "delay": "%s",\n' \
            "$([[ $paths == 2 ]] && echo "$host_rate" || echo "$rate")" "$queue" "$delay"
        printf '  "hosts": [\n'
        for ((i = 1; i <= hosts; i++)); do
            if [[ $paths == 1 ]]; then
                gw="$prefix-r1" side="r1"
            elif ((i <= half)); then
                gw="$prefix-left" side="left"
            else
                gw="$prefix-right" side="right"
            fi
            printf '%s    {"index": %d, "netns": "%s-h%d", "interface": "eth0", ' \
                "$sep" "$i" "$prefix" "$i"
            printf '"address": "10.77.%d.1", "subnet": "10.77.%d.0/24", ' "$i" "$i"
            printf '"gateway": "10.77.%d.254", "gateway_netns": "%s", ' "$i" "$gw"
            printf '"gateway_interface": "h%d", "side": "%s"}' "$i" "$side"
            sep=$',\n'
        done
        printf '\n  ],\n'
        if [[ $paths == 1 ]]; then
            printf '  "routers": [{"netns": "%s-r1", "interfaces": {' "$prefix"
            sep=""
            for ((i = 1; i <= hosts; i++)); do
                printf '%s"h%d": "10.77.%d.254"' "$sep" "$i" "$i"
                sep=", "
            done
            printf '}}],\n  "leaves": []\n}\n'
        else
            printf '  "routers": [\n'
            printf '    {"netns": "%s-r1", "interfaces": ' "$prefix"
            printf '{"left": "10.77.201.2", "right": "10.77.203.2"}},\n'
            printf '    {"netns": "%s-r2", "interfaces": ' "$prefix"
            printf '{"left": "10.77.202.2", "right": "10.77.204.2"}}\n  ],\n'
            printf '  "leaves": [\n'
            printf '    {"netns": "%s-left", "interfaces": ' "$prefix"
            printf '{"r1": "10.77.201.1", "r2": "10.77.202.1"}},\n'
            printf '    {"netns": "%s-right", "interfaces": ' "$prefix"
            printf '{"r1": "10.77.203.1", "r2": "10.77.204.1"}}\n  ]\n}\n'
        fi
    } >"$json.tmp" || die "cannot write $json"
    mv "$json.tmp" "$json"

    echo "testbed $prefix: $hosts hosts, $paths path(s), rate $rate, queue $queue packets," \
        "delay $delay"
    for ((i = 1; i <= hosts; i++)); do
        if [[ $paths == 1 ]]; then gw="$prefix-r1"; elif ((i <= half)); then gw="$prefix-left"; else gw="$prefix-right"; fi
        echo "  $prefix-h$i  eth0 10.77.$i.1/24  via 10.77.$i.254 ($gw h$i)"
    done
    if [[ $paths == 2 ]]; then
        echo "  $prefix-left   r1 10.77.201.1  r2 10.77.202.1  (multipath to right hosts)"
        echo "  $prefix-r1     left 10.77.201.2  right 10.77.203.2"
        echo "  $prefix-r2     left 10.77.202.2  right 10.77.204.2"
        echo "  $prefix-right  r1 10.77.203.1  r2 10.77.204.1  (multipath to left hosts)"
    fi
    echo "summary: $json"
}

main() {
    [[ $# -ge 1 ]] || {
        usage >&2
        exit 2
    }
    local cmd=$1
    shift
    local prefix=eqtb hosts="" rate=500mbit queue=15 delay=0ms paths=1 host_rate=""
    local switch=kernel discipline="" eqds_port=7700
    case $cmd in
    -h | --help | help)
        usage
        return 0
        ;;
    up | down)
        while [[ $# -gt 0 ]]; do
            case $1 in
            --prefix | --hosts | --rate | --queue | --delay | --paths | --host-rate | --switch | \
                --discipline | --eqds-port)
                [[ $# -ge 2 ]] || die "$1 needs a value"
                case $1 in
                --prefix) prefix=$2 ;;
                --hosts) hosts=$2 ;;
                --rate) rate=$2 ;;
                --queue) queue=$2 ;;
                --delay) delay=$2 ;;
                --paths) paths=$2 ;;
                --host-rate) host_rate=$2 ;;
                --switch) switch=$2 ;;
                --discipline) discipline=$2 ;;
                --eqds-port) eqds_port=$2 ;;
                esac
                [[ $cmd == up || $1 == --prefix ]] || die "down takes only --prefix"
                shift 2
                ;;
            -h | --help)
                usage
                return 0
                ;;
            *) die "unknown argument '$1' (see testbed.sh --help)" ;;
            esac
        done
        check_prefix "$prefix"
        [[ $EUID -eq 0 ]] || die "must run as root (creates network namespaces)"
        if [[ $cmd == up ]]; then
            [[ -n $hosts ]] || die "up needs --hosts N"
            cmd_up "$prefix" "$hosts" "$rate" "$queue" "$delay" "$paths" "${host_rate:-$rate}" \
                "$switch" "$discipline" "$eqds_port"
        else
            cmd_down "$prefix"
        fi
        ;;
    exec)
        if [[ ${1:-} == --prefix ]]; then
            [[ $# -ge 2 ]] || die "--prefix needs a value"
            prefix=$2
            shift 2
        fi
        check_prefix "$prefix"
        [[ $# -ge 2 ]] || die "exec needs HOSTINDEX and a command"
        [[ $1 =~ ^[0-9]+$ ]] || die "bad HOSTINDEX '$1'"
        local ns="$prefix-h$1"
        shift
        ip netns list | grep -q "^$ns\( \|$\)" || die "no namespace $ns (run testbed.sh up)"
        exec ip netns exec "$ns" "$@"
        ;;
    *)
        usage >&2
        die "unknown command '$cmd'"
        ;;
    esac
}

main "$@"
