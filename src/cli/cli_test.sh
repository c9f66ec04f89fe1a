#!/usr/bin/env bash
# End-to-end checks of the seedance CLI: bad input exits 2 with FILE:LINE: field '...';
# good input exits 0 and writes what -o/--format (and the deprecated --json/--report) ask for;
# outputs never replace an input; numeric flags and options that would make a run unbounded are
# refused up front.
# Usage: cli_test.sh PATH/TO/seedance
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0

pods="$tmp/pods.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\np1,2000,2048,1,1000\n' >"$pods"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,1\n' >"$tmp/tiny.csv"
nodes="$tmp/nodes.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,32000,65536,4,V100M32\n' >"$nodes"

# expect_error NAME WANT_SUBSTRING ARGS...
expect_error() {
  local name=$1 want=$2
  shift 2
  local out rc
  out=$("$bin" simulate -q "$@" 2>&1)
  rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "FAIL $name: exit $rc, want 2 ($out)"; fail=$((fail + 1)); return
  fi
  if [[ "$out" != *"$want"* ]]; then
    echo "FAIL $name: message '$out' lacks '$want'"; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536\n' >"$tmp/truncated.csv"
expect_error "truncated row" "truncated.csv:2: field 'gpu'" --nodes "$tmp/truncated.csv" --pods "$pods"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,lots,65536,2,T4\n' >"$tmp/nonnum.csv"
expect_error "non-numeric field" "nonnum.csv:2: field 'cpu_milli'" --nodes "$tmp/nonnum.csv" --pods "$pods"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,-5,1024,1,500\n' >"$tmp/negative.csv"
expect_error "negative quantity" "negative.csv:2: field 'cpu_milli'" --nodes "$nodes" --pods "$tmp/negative.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\np0,1000,1024,1,500,red\n' >"$tmp/header.csv"
expect_error "unknown header" "header.csv:1: field 'colour'" --nodes "$nodes" --pods "$tmp/header.csv"
: >"$tmp/empty.csv"
expect_error "empty file" "empty.csv:1" --nodes "$nodes" --pods "$tmp/empty.csv"
expect_error "missing file" "$tmp/missing.csv" --nodes "$tmp/missing.csv" --pods "$pods"
expect_error "unknown policy" "unknown policy 'nope'" --nodes "$nodes" --pods "$pods" --policy nope
expect_error "bad seeds" "--seeds" --nodes "$nodes" --pods "$pods" --seeds 9-1
expect_error "bad policy option" "unknown cas option" --nodes "$nodes" --pods "$pods" --policy cas --policy-opt nope=1
expect_error "unknown mode" "--mode" --nodes "$nodes" --pods "$pods" --mode sideways
expect_error "unknown rng" "--rng" --nodes "$nodes" --pods "$pods" --rng dice
expect_error "reference rng outside fill" "--rng reference" --nodes "$nodes" --pods "$pods" --mode churn --rng reference
expect_error "dump order outside fill" "--dump-order" --nodes "$nodes" --pods "$pods" --mode churn --dump-order "$tmp/order.csv"

if "$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy fgd,cas --seeds 1-2 \
    --json "$tmp/out.json" --report "$tmp/out.html" >"$tmp/stdout" 2>&1 &&
   grep -q '"unalloc_gpu_pct_at_100"' "$tmp/out.json" && grep -q '<svg' "$tmp/out.html" &&
   grep -q '^cas ' "$tmp/stdout"; then
  echo "ok   good input writes table, JSON and HTML"; pass=$((pass + 1))
else
  echo "FAIL good input"; cat "$tmp/stdout"; fail=$((fail + 1))
fi

if "$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy bestfit --seeds 42 --rng reference \
    --json "$tmp/ref.json" >"$tmp/stdout" 2>&1 && grep -q '"unalloc_gpu_pct_at_100"' "$tmp/ref.json"; then
  echo "ok   reference random stream"; pass=$((pass + 1))
else
  echo "FAIL reference random stream"; cat "$tmp/stdout"; fail=$((fail + 1))
fi

# --dump-order: a header, then each seed's arrivals with the cumulative GPU demand; the two trace
# pods (1500 milli) come first, then resampled ones up to 1.3 x 6 GPUs.
if "$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy bestfit --seeds 1-2 \
    --dump-order "$tmp/order.csv" >"$tmp/stdout" 2>&1 &&
   head -1 "$tmp/order.csv" | grep -q '^seed,position,name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,arrived_gpu_milli$' &&
   awk -F, 'NR > 1 && $2 == 1 { if ($9 != 1500) bad = 1; n++ } NR > 1 { last[$1] = $9 }
            END { exit !(n == 2 && !bad && last[1] >= 7800 && last[2] >= 7800) }' "$tmp/order.csv"; then
  echo "ok   dump order"; pass=$((pass + 1))
else
  echo "FAIL dump order"; cat "$tmp/stdout" "$tmp/order.csv"; fail=$((fail + 1))
fi

# ---- simulate: the output convention (-o/--format, deprecated --json/--report aliases)
# check NAME COMMAND...: passes when the command (a shell snippet) succeeds.
check() {
  local name=$1
  shift
  if (eval "$@") >"$tmp/check.out" 2>&1; then
    echo "ok   $name"; pass=$((pass + 1))
  else
    echo "FAIL $name"; cat "$tmp/check.out"; fail=$((fail + 1))
  fi
}
sim() { "$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy bestfit,cas --seeds 1-2 "$@"; }

check "default output is the table on stdout" \
  'sim >"$tmp/t.txt" && grep -q "^policy " "$tmp/t.txt" && grep -q "^cas " "$tmp/t.txt" &&
   grep -q "^4 runs (2 policies x 2 seeds)" "$tmp/t.txt"'
check "-o FILE.json writes JSON with the schema header first" \
  'sim -o "$tmp/o.json" >"$tmp/so" && [[ ! -s "$tmp/so" ]] &&
   head -2 "$tmp/o.json" | grep -q "\"schema_version\": \"simulate/v1\"" &&
   grep -q "\"seedance_version\"" "$tmp/o.json" && grep -q "\"command_line\"" "$tmp/o.json"'
check "--format json to stdout" \
  'sim --format json | grep -q "\"unalloc_gpu_pct_at_100\""'
check "--format csv: one row per policy x seed, unit-named columns" \
  'sim --format csv >"$tmp/o.csv" && head -1 "$tmp/o.csv" | grep -q "^policy,seed,mode,pods_arrived,pods_scheduled,pods_failed,unalloc_gpu_pct_at_100,unalloc_gpu_pct_at_130,frag_ratio_pct_at_90,wall_s$" &&
   [[ $(wc -l <"$tmp/o.csv") -eq 5 ]]'
check "-o FILE.html writes the HTML report" 'sim -o "$tmp/o.html" && grep -q "<svg" "$tmp/o.html"'
check "deprecated --json and --report in one run write both, warn, keep the table" \
  'sim --json "$tmp/d.json" --report "$tmp/d.html" >"$tmp/d.out" 2>"$tmp/d.err" &&
   grep -q "schema_version" "$tmp/d.json" && grep -q "<svg" "$tmp/d.html" && grep -q "^cas " "$tmp/d.out" &&
   grep -q "\-\-json is deprecated" "$tmp/d.err" && grep -q "\-\-report is deprecated" "$tmp/d.err"'
check "--score-cache off gives the same placements" \
  'sim --policy bestfit,fgd --format csv --score-cache off | cut -d, -f1-9 >"$tmp/off" &&
   sim --policy bestfit,fgd --format csv --score-cache on | cut -d, -f1-9 >"$tmp/on" && cmp -s "$tmp/on" "$tmp/off"'
check "no arguments (make demo) prints the table" \
  '"$bin" simulate -q >"$tmp/demo" && grep -q "^cas " "$tmp/demo" && grep -q "^70 runs" "$tmp/demo"'
cp "$nodes" "$tmp/nodes.keep"
expect_error "output naming an input" "refusing to overwrite an input" --nodes "$nodes" --pods "$pods" -o "$nodes"
expect_error "deprecated output naming an input" "refusing to overwrite an input" --nodes "$nodes" --pods "$pods" --report "$pods"
check "the input survived" 'cmp -s "$nodes" "$tmp/nodes.keep"'
expect_error "two outputs naming one file" "is also the output of" --nodes "$nodes" --pods "$pods" -o "$tmp/same.json" --json "$tmp/same.json"
expect_error "-o json is refused" "-o takes a file name" -o json
expect_error "unknown format" "--format" --format yaml
expect_error "dump order outside fill via -o too" "--dump-order" --mode replay --dump-order "$tmp/x.csv"
check "unwritable output fails before any run" \
  '! "$bin" simulate -q -o /nonexistent-dir/x.json 2>"$tmp/e" && grep -q "/nonexistent-dir/x.json" "$tmp/e"'
check "a full disk is exit 1" \
  '"$bin" simulate -q --policy bestfit --seeds 1 -o /dev/full 2>"$tmp/e"; [[ $? -eq 1 ]] && grep -q "/dev/full" "$tmp/e"'
check "a FIFO output is written through, not replaced" \
  'mkfifo "$tmp/fifo" && { cat "$tmp/fifo" >"$tmp/fifo.got" & } && sleep 0.2 &&
   sim --format csv -o "$tmp/fifo" && wait && [[ -p "$tmp/fifo" ]] && grep -q "^policy,seed" "$tmp/fifo.got"'
check "--dump-order goes through the writer (stdout with -)" \
  '"$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy bestfit --seeds 1 --dump-order - -o "$tmp/t2.txt" |
   head -1 | grep -q "^seed,position,name"'

# ---- simulate: numeric flags and options that would make a run unbounded
expect_error "churn --duration 0" "--duration" --mode churn --duration 0
expect_error "--duration inf" "--duration" --mode churn --duration inf
expect_error "--duration nan" "--duration" --mode churn --duration nan
expect_error "--warmup 1e300" "--warmup" --mode churn --warmup 1e300
expect_error "--warmup negative" "--warmup" --mode churn --warmup -1
expect_error "--seed -1" "--seeds" --seed -1
expect_error "seed range past 2^64-1" "--seeds" --seeds 18446744073709551615-18446744073709551616
expect_error "--jobs out of range" "--jobs" --jobs 100000
expect_error "--jobs negative" "--jobs" --jobs -1
expect_error "--tune nan" "--tune" --tune nan
expect_error "--tune inf" "--tune" --tune inf
expect_error "--tune 0" "--tune" --tune 0
expect_error "--load garbage" "--load" --mode churn --load 1.2x
expect_error "--time-scale 0" "--time-scale" --mode replay --time-scale 0
expect_error "too many runs" "more than the limit" --seeds 1-5000
expect_error "churn event cap" "more than the limit of 5000000" --mode churn --load 100 --duration 87600h
{ echo 'sn,cpu_milli,memory_mib,gpu,model'; for i in $(seq 0 99); do echo "n$i,1000,1024,8,T4"; done; } >"$tmp/big.csv"
expect_error "fill pod cap" "more than the limit of 5000000" --tune 100 --nodes "$tmp/big.csv" --pods "$tmp/tiny.csv"
expect_error "--policy-opt nan names the key" "sigmoid_scale" --policy cas --policy-opt sigmoid_scale=nan
expect_error "--policy-opt inf names the key" "sigmoid_scale" --policy cas --policy-opt sigmoid_scale=inf
expect_error "--policy-opt garbage names the key" "sigmoid_scale" --policy cas --policy-opt sigmoid_scale=lots
expect_error "--policy-opt without =" "KEY=VALUE" --policy cas --policy-opt sigmoid_scale
expect_error "--score-cache maybe" "--score-cache" --score-cache maybe
check "--duration takes suffixes" \
  '"$bin" simulate -q --mode churn --policy bestfit --seeds 1 --duration 90m --warmup 30m --format json |
   grep -q "\"duration_h\": 1.5"'

# ---- simulate: input meaning (file and line named, exit 2)
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np0,1000,1024,1,500,100,200\np1,1000,1024,1,500,100,300\n' >"$tmp/sametime.csv"
expect_error "replay with one creation time" "sametime.csv: replay needs pods created at different times" \
  --nodes "$nodes" --pods "$tmp/sametime.csv" --mode replay
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np0,1000,1024,1,500,0,200\np1,1000,1024,1,500,36000,36100\n' >"$tmp/gap.csv"
expect_error "replay window without an arrival" "gap.csv: replay: no pod arrives in the measured window" \
  --nodes "$nodes" --pods "$tmp/gap.csv" --mode replay --warmup 1h --duration 1h
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,T4\nn0,1,1,1,T4\n' >"$tmp/dupnode.csv"
expect_error "duplicate node name" "dupnode.csv:3: field 'sn': duplicate node name (first at line 2)" \
  --nodes "$tmp/dupnode.csv" --pods "$pods"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,0,0\np0,1,1,0,0\n' >"$tmp/duppod.csv"
expect_error "duplicate pod name" "duppod.csv:3: field 'name': duplicate pod name (first at line 2)" \
  --nodes "$nodes" --pods "$tmp/duppod.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,0,\n' >"$tmp/nogpu.csv"
expect_error "cluster without GPUs names the file" "nogpu.csv: the cluster has no GPUs" \
  --nodes "$tmp/nogpu.csv" --pods "$pods"
{ echo 'sn,cpu_milli,memory_mib,gpu,model'; for i in $(seq 0 70); do echo "n$i,1000,1024,1,M$i"; done; } >"$tmp/models.csv"
expect_error "more than 63 GPU models names the file" "models.csv: node 'n63': more than 63 distinct GPU models" \
  --nodes "$tmp/models.csv" --pods "$pods"
expect_error "both inputs from stdin" "cannot both read standard input" --nodes - --pods - </dev/null
check "--pods - reads standard input" \
  '"$bin" simulate -q --nodes "$nodes" --pods - --policy bestfit --seeds 1 <"$pods" | grep -q "^bestfit "'
expect_error "directory as --nodes" "is a directory" --nodes "$tmp" --pods "$pods"
expect_error "directory as --pods" "is a directory" --nodes "$nodes" --pods "$tmp"
{ echo 'name,cpu_milli,memory_mib,num_gpu,gpu_milli'; printf 'p0,%s,1,0,0\n' "$(head -c 2000000 /dev/zero | tr '\0' 9)"; } >"$tmp/huge.csv"
check "a 2 MB value gives a short message" \
  '! "$bin" simulate -q --nodes "$nodes" --pods "$tmp/huge.csv" 2>"$tmp/e" && [[ $(wc -c <"$tmp/e") -lt 1000 ]]'
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1000,1024,1,500,H100\np1,1000,1024,1,500,T4\n' >"$tmp/spec.csv"
check "unknown gpu_spec model is a warning with file:line" \
  '"$bin" simulate -q --nodes "$nodes" --pods "$tmp/spec.csv" --policy bestfit --seeds 1 >/dev/null 2>"$tmp/e" &&
   grep -q "warning: .*spec.csv:2: field .gpu_spec.: .H100. is not a GPU model of the cluster" "$tmp/e"'
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np\xff\x1b[31m,1000,1024,1,500,\xfe\x1b]0;x\x07\np1,1000,1024,1,500,T4\n' >"$tmp/bytes.csv"
check "invalid UTF-8 and escapes in names: valid JSON, clean terminal" \
  '"$bin" simulate -q --nodes "$nodes" --pods "$tmp/bytes.csv" --policy bestfit --seeds 1 --format json >"$tmp/b.json" 2>"$tmp/e" &&
   python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/b.json" && ! grep -q $'"'"'\x1b'"'"' "$tmp/e" &&
   "$bin" simulate -q --nodes "$nodes" --pods "$tmp/bytes.csv" --policy bestfit --seeds 1 --dump-order "$tmp/b.order" >/dev/null 2>&1'
printf 'name: t\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n' >"$tmp/bomb.yaml"
for i in 1 2 3 4 5 6 7 8 9; do printf 'l%s: &l%s [*l%s, *l%s, *l%s, *l%s, *l%s, *l%s, *l%s, *l%s, *l%s, *l%s]\n' $i $i $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)) $((i-1)); done >>"$tmp/bomb.yaml"
expect_error "YAML alias bomb" "bomb.yaml:7: the document expands to more than 1000000 nodes" --nodes "$tmp/bomb.yaml" --pods "$pods"
{ printf '{"nodes": '; printf '[%.0s' $(seq 100); printf ']%.0s' $(seq 100); printf '}'; } >"$tmp/deep.json"
expect_error "deep JSON descriptor" "deep.json: $.nodes[0]" --nodes "$tmp/deep.json" --pods "$pods"
printf 'name: t\nnodes: []\n' >"$tmp/empty.yaml"
expect_error "descriptor with no nodes" "empty.yaml: no nodes" --nodes "$tmp/empty.yaml" --pods "$pods"

# expect_rc NAME WANT_RC WANT_SUBSTRING ARGS...: any subcommand, exit status and output.
expect_rc() {
  local name=$1 want_rc=$2 want=$3
  shift 3
  local out rc
  out=$("$bin" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL $name: exit $rc, want $want_rc ($out)"; fail=$((fail + 1)); return
  fi
  if [[ "$out" != *"$want"* ]]; then
    echo "FAIL $name: output lacks '$want' ($out)"; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

# The other subcommands: wiring, exit statuses and output contracts (their own tests go deeper).
expect_rc "no subcommand" 2 "subcommand is required"
expect_rc "clock simulate json" 0 '"estimator": "ewma"' clock simulate --samples 64 --json
expect_rc "clock simulate zero samples" 2 "samples" clock simulate --samples 0
expect_rc "clock probe needs a server" 2 "--server" clock probe
expect_rc "clock probe unreachable" 1 "" clock probe --server 127.0.0.1:9 --samples 1 --timeout-ms 200
expect_rc "bench timers json" 0 '"impl": "seedance"' bench timers --timers 1000 --repetitions 1 \
  --min-time 0.01 --lateness-s 0 --json
expect_rc "bench timers zero" 2 "timers" bench timers --timers 0
expect_rc "analyze missing input" 2 "nope.json" analyze --input "$tmp/nope.json" --report cost-savings
expect_rc "serve-sim missing trace" 2 "nope.csv" serve-sim --trace "$tmp/nope.csv" --model llama-3-8b \
  --gpu a100-80g
expect_rc "costmodel unknown gpu" 2 "gpu" costmodel check --profile "$tmp/nope.csv" --gpu b9000
echo "34 23 0:31 / $tmp/cg rw,relatime - cgroup cgroup rw,cpuset" >"$tmp/mi"
mkdir -p "$tmp/cg"
expect_rc "node-agent topology" 0 "numa_node" node-agent topology
expect_rc "node-agent topology json" 0 '"schema_version": "node-agent-topology/v1"' node-agent topology \
  --format json
expect_rc "node-agent pin refuses .." 2 "'..'" node-agent pin --cgroup ../etc --numa 0 --dry-run \
  --mountinfo "$tmp/mi"
expect_rc "node-agent pin needs --cgroup" 2 "--cgroup" node-agent pin --numa 0


# ---- Kubernetes snapshots (`kubectl get nodes|pods -o json`; fixtures in src/k8s/testdata)
k8s="$(cd "$(dirname "$0")/../k8s/testdata" && pwd)"
expect_rc "simulate reads a kubectl snapshot" 0 '"name": "cas"' simulate -q \
  --nodes "$k8s/nodes.json" --pods "$k8s/pods.json" --policy cas --seeds 1 --format json
expect_rc "analyze reads a kubectl snapshot" 0 "Consolidation plan" analyze \
  --nodes "$k8s/nodes.json" --pods "$k8s/pods.json"
sed 's/"cpu": "16"/"cpu": "sixteen"/' "$k8s/pods.json" >"$tmp/badpods.json"
expect_rc "snapshot bad quantity names the path" 2 \
  "badpods.json: \$.items[0].spec.containers[0].resources.requests.cpu: 'sixteen'" simulate -q \
  --nodes "$k8s/nodes.json" --pods "$tmp/badpods.json"
sed 's/"nvidia.com\/gpu": "8"/"amd.com\/gpu": "8"/' "$k8s/pods.json" >"$tmp/amdpods.json"
expect_rc "snapshot unknown resource is refused" 2 "--ignore-unknown" simulate -q \
  --nodes "$k8s/nodes.json" --pods "$tmp/amdpods.json"
expect_rc "snapshot unknown resource skipped when asked" 0 "amd.com/gpu" simulate --seeds 1 \
  --policy bestfit --nodes "$k8s/nodes.json" --pods "$tmp/amdpods.json" --ignore-unknown
expect_rc "pod snapshot needs a node snapshot" 2 "kubectl node snapshot" simulate -q \
  --nodes "$nodes" --pods "$k8s/pods.json"
expect_rc "analyze takes one input" 2 "not both" analyze --nodes "$k8s/nodes.json" -i "$tmp/x.json"

# ---- simulate --mode autoscale (docs/cluster-autoscaler.md)
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np0,4000,8192,1,1000,0,3600\np1,2000,4096,1,500,0,600\np2,8000,16384,2,1000,0,7200\n' >"$tmp/life.csv"
check "autoscale writes a table with ratios" \
  '"$bin" simulate -q --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --seeds 1-2 \
     --duration 4h --warmup 1h | grep -q "^seedance / ca-least-waste"'
check "autoscale writes JSON, one run per autoscaler and seed" \
  '"$bin" simulate -q --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --seeds 1-2 \
     --duration 4h --warmup 1h --policy fgd --format json |
   python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"schema_version\"] == \"simulate-autoscale/v1\"; assert len(d[\"runs\"]) == 4 and len(d[\"ratios\"]) == 2, d; assert d[\"meta\"][\"placement\"] == \"fgd\""'
expect_error "autoscale flag outside autoscale" "--expanders: only for --mode autoscale" \
  --nodes "$nodes" --pods "$pods" --expanders seedance
expect_error "--prescale outside autoscale" "--prescale: only for --mode autoscale" \
  --nodes "$nodes" --pods "$pods" --prescale
expect_error "fill flag in autoscale" "--tune: not for --mode autoscale" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --tune 2
expect_error "autoscale needs files" "--mode autoscale needs --nodes FILE and --pods FILE" --mode autoscale
expect_error "autoscale unknown expander" "--expanders: unknown expander 'hpa'" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --expanders seedance,hpa
expect_error "autoscale one placement policy" "--policy: autoscale places with one registered policy" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --policy fgd,cas
expect_error "autoscale bad knob" "unknown cas option 'x'" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --policy cas --policy-opt x=1
expect_error "autoscale provisioning range" "--provision-max" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --provision-min 300 --provision-max 200
expect_error "autoscale arrival cap" "more than the limit of 5000000" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --load 100 --duration 87600h
expect_error "autoscale scan cap" "more than the limit of 1000000" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --scan-interval 0.001 --duration 100h
expect_error "autoscale writes no csv" "--format" \
  --mode autoscale --nodes "$nodes" --pods "$tmp/life.csv" --format csv
expect_error "autoscale pods without lifetimes" "deletion time" \
  --mode autoscale --nodes "$nodes" --pods "$pods"

# ---- cache simulate (docs/cache.md): the grid, its three formats, --sizes items, the formats
printf '1\n2\n1\n3\n1\n2\n4\n1\n' >"$tmp/ids.txt"
printf '10 3 0 1\n20 1 0 2\n10 2 0 3\n' >"$tmp/arc.lis"
csim() { "$bin" cache simulate -q "$@"; }
check "cache simulate: JSON rows, policy-major, as SimulateJson" \
  'csim --trace "$tmp/ids.txt" --policy lru,fifo --sizes 1,2 --format json |
   python3 -c "import json,sys; d=json.load(sys.stdin); assert [(r[\"policy\"], r[\"size\"]) for r in d] == [(\"lru\",1),(\"lru\",2),(\"fifo\",1),(\"fifo\",2)], d; assert d[1] == {\"policy\":\"lru\",\"size\":2,\"requests\":8,\"misses\":6,\"miss_ratio\":0.75}, d[1]"'
check "cache simulate: csv with a header, one row per cell" \
  'csim --trace "$tmp/arc.lis" --policy all --sizes 50% -o "$tmp/c.csv" &&
   head -1 "$tmp/c.csv" | grep -qx "policy,size,requests,misses,miss_ratio" &&
   grep -q "^belady,2,6," "$tmp/c.csv"'
check "cache simulate: the table is aligned" \
  'csim --trace "$tmp/ids.txt" --policy lru,wtinylfu --sizes 2 | awk "{print length(\$0)}" | sort -u | wc -l | grep -qx 1'
expect_rc "cache simulate: --sizes names the item" 2 "--sizes: item 3 '12XB': unknown unit" \
  cache simulate --trace "$tmp/ids.txt" --policy lru --sizes 1,2,12XB
expect_rc "cache simulate: bytes need object sizes" 2 "--sizes: item 1 '1MiB'" \
  cache simulate --trace "$tmp/ids.txt" --policy lru --sizes 1MiB
expect_rc "cache simulate: --object-sizes on needs a sized format" 2 "--object-sizes on" \
  cache simulate --trace "$tmp/ids.txt" --policy lru --sizes 1 --object-sizes on
expect_rc "cache simulate: unknown policy" 2 "--policy: item 1 'lfu2'" \
  cache simulate --trace "$tmp/ids.txt" --policy lfu2 --sizes 1
cp "$tmp/ids.txt" "$tmp/ids.bin"
expect_rc "cache simulate: a name that tells no format" 2 "--trace-format" \
  cache simulate --trace "$tmp/ids.bin" --policy lru --sizes 1
printf '10 3 0 1\n20 x 0 2\n' >"$tmp/bad.lis"
expect_rc "cache simulate: a bad line names file:line" 2 "bad.lis:2: field 'n_blocks'" \
  cache simulate --trace "$tmp/bad.lis" --policy lru --sizes 1
expect_rc "cache simulate: -o naming the trace" 2 "refusing to overwrite an input" \
  cache simulate --trace "$tmp/ids.txt" --policy lru --sizes 1 -o "$tmp/ids.txt"
expect_rc "cache simulate: missing trace" 2 "nope.txt" \
  cache simulate --trace "$tmp/nope.txt" --policy lru --sizes 1
printf '1,hm,0,Read,0,4096,1\n2,hm,0,Read,4096,4096,1\n3,hm,0,Read,0,4096,1\n' >"$tmp/msr-t.csv"
check "cache simulate: msr by its name, byte-sized by default" \
  'csim --trace "$tmp/msr-t.csv" --policy lru --sizes 4KiB,100% --format csv |
   grep -qx "lru,8192,3,2,0.6666666666666666"'

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
