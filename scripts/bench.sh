#!/usr/bin/env bash
# Measures npusim's speed and prints a table; writes the figures as JSON (default
# traces/bench/bench.json). It measures, it asserts nothing: targets are checked by reading it.
#   scripts/bench.sh [--runs N] [--out FILE] [--skip-build] [--no-scale]
# --no-scale skips the schedule files of 1M and 5M commands (a few minutes and ~10 GB of disk).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
out=traces/bench/bench.json
build=1
scale=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --skip-build) build=0; shift ;;
    --no-scale) scale=0; shift ;;
    *) echo "usage: scripts/bench.sh [--runs N] [--out FILE] [--skip-build] [--no-scale]" >&2; exit 2 ;;
  esac
done
if [ "$build" = 1 ]; then bash scripts/build.sh >/dev/null; fi
bin=build/npusim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

# Median of the numbers on stdin.
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Wall seconds and peak RSS (KiB) of a command, `runs` times; prints "median_s median_kib".
measure() {
  local times=() rss=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
    read -r t m < "$tmp/time"
    times+=("$t"); rss+=("$m")
  done
  echo "$(printf '%s\n' "${times[@]}" | median) $(printf '%s\n' "${rss[@]}" | median)"
}

echo "npusim benchmark ($(nproc) cores, median of $runs runs)"
json="{\"cores\": $(nproc), \"runs\": $runs"

# Target (issue 13): <= 0.15 s on default.
printf '\n%-44s %10s %12s\n' "ResNet-50 end to end (stats level 70)" "wall s" "peak RSS MiB"
for config in default server; do
  read -r s kib < <(measure "$bin" run models/zoo/resnet50.json -c "$config" -o "$tmp/r50-$config" -q)
  printf '%-44s %10s %12.1f\n' "  $config" "$s" "$(echo "$kib / 1024" | bc -l)"
  json="$json, \"resnet50_${config}_wall_s\": $s, \"resnet50_${config}_peak_rss_kib\": $kib"
done

# The 7B decoder layer (308,243 commands on default): every output at the default level, which
# aggregates the traces and stats.json past 20,000 commands (docs/outputs.md#detail).
# Targets (issue 13): <= 2 s end to end, <= 100 MB of outputs.
printf '\n%-44s %10s %12s %10s\n' "LLM 7B decoder layer end to end (level 70)" "wall s" "peak RSS MiB" "output MB"
read -r s kib < <(measure "$bin" run models/zoo/llm7b_decoder_layer.json -c default -o "$tmp/llm7b" -q)
llm_bytes=$(du -sb "$tmp/llm7b" | cut -f1)
printf '%-44s %10s %12.1f %10.1f\n' "  default" "$s" "$(echo "$kib / 1024" | bc -l)" "$(echo "$llm_bytes / 1000000" | bc -l)"
json="$json, \"llm7b_default_wall_s\": $s, \"llm7b_default_peak_rss_kib\": $kib, \"llm7b_default_output_bytes\": $llm_bytes"
rm -rf "$tmp/llm7b"

# The whole Llama-2-7B model on server: 512-token prefill and 128 decode steps, every output at
# the default level. Once: it takes tens of seconds, and the simulation runs on one core (each
# step's child process runs while its parent waits).
# Targets (issue 13): <= 60 s on one core, <= 2 GB peak RSS.
printf '\n%-44s %10s %12s %10s\n' "Llama-2-7B, 512 prefill + 128 decode (once)" "wall s" "peak RSS MiB" "output MB"
read -r s kib < <(runs=1 measure "$bin" run models/llm/llama2_7b.json -c server -o "$tmp/llama2_7b" -q)
l7_bytes=$(du -sb "$tmp/llama2_7b" | cut -f1)
printf '%-44s %10s %12.1f %10.1f\n' "  server" "$s" "$(echo "$kib / 1024" | bc -l)" "$(echo "$l7_bytes / 1000000" | bc -l)"
json="$json, \"llama2_7b_server_wall_s\": $s, \"llama2_7b_server_peak_rss_kib\": $kib, \"llama2_7b_server_output_bytes\": $l7_bytes"
rm -rf "$tmp/llama2_7b"

# The 7B decoder layer sharded over devices (docs/multi-device.md): the compile of every step,
# the collectives and a simulation of every device's commands; the layer's cycles beside it.
printf '\n%-44s %10s %12s %12s\n' "LLM 7B layer on server, sharded (--devices)" "wall s" "peak RSS MiB" "cycles"
for n in 1 2 4; do
  read -r s kib < <(measure "$bin" run models/zoo/llm7b_decoder_layer.json -c server --devices "$n" -o "$tmp/md$n" -q)
  cycles=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runtime']['total_cycles'])" "$tmp/md$n/stats.json")
  printf '%-44s %10s %12.1f %12s\n' "  $n device(s)" "$s" "$(echo "$kib / 1024" | bc -l)" "$cycles"
  json="$json, \"llm7b_server_devices${n}_wall_s\": $s, \"llm7b_server_devices${n}_cycles\": $cycles"
  rm -rf "$tmp/md$n"
done

printf '\n%-44s %14s\n' "Simulator core (simulate only)" "commands/s"
core=$(build/npusim_bench core models/zoo/resnet50.json default)
cps=$(python3 -c "import json,sys; print(round(json.loads(sys.argv[1])['simulate_commands_per_s']))" "$core")
printf '%-44s %14s\n' "  ResNet-50 schedule, default" "$cps"
json="$json, \"core_resnet50_commands_per_s\": $cps"

# The simulate phase alone of the larger zoo models: most of their DMA transfers meet no other
# and are costed in closed form (docs/cost-model.md); median of `runs` runs each.
printf '\n%-44s %10s %10s\n' "Simulate phase (npusim_bench core)" "sim s" "cmd/s"
for mc in llm7b_decoder_layer:default llm7b_decoder_layer:server bert_base_layer:default \
          yolo_tiny:default; do
  model=${mc%%:*}; config=${mc#*:}
  sims=()
  for _ in $(seq "$runs"); do
    build/npusim_bench core "models/zoo/$model.json" "$config" > "$tmp/core.json"
    sims+=("$(python3 -c "import json; print(json.load(open('$tmp/core.json'))['simulate_s'])")")
  done
  sim_s=$(printf '%s\n' "${sims[@]}" | median)
  cmds=$(python3 -c "import json; print(json.load(open('$tmp/core.json'))['commands'])")
  printf '%-44s %10.3f %10.0f\n' "  $model, $config" "$sim_s" "$(echo "$cmds / $sim_s" | bc -l)"
  json="$json, \"core_${model}_${config}_simulate_s\": $sim_s"
done

printf '\n%-44s %10s %10s %12s\n' "Synthetic schedules (generate+estimate+simulate)" "wall s" "sim cmd/s" "peak RSS MiB"
for n in 10000 100000 1000000; do
  /usr/bin/time -f "%e %M" -o "$tmp/time" build/npusim_bench synthetic "$n" > "$tmp/syn.json"
  read -r s kib < "$tmp/time"
  cps=$(python3 -c "import json; print(round(json.load(open('$tmp/syn.json'))['simulate_commands_per_s']))")
  printf '%-44s %10s %10s %12.1f\n' "  $n commands" "$s" "$cps" "$(echo "$kib / 1024" | bc -l)"
  json="$json, \"synthetic_${n}_wall_s\": $s, \"synthetic_${n}_simulate_commands_per_s\": $cps, \"synthetic_${n}_peak_rss_kib\": $kib"
done

if [ "$scale" = 1 ]; then
  # Schedules at scale, from files as a user brings them (docs/schedule.md, "Limits"): written by
  # npusim_bench write-synthetic, then read back. Once each: they take tens of seconds.
  # Targets (issue 17): 1M commands estimated in <= 3 s and <= 1 GiB; 5M run in <= 30 s, 4 GiB.
  printf '\n%-44s %10s %12s\n' "Schedule files (load from JSON, once)" "wall s" "peak RSS MiB"
  for n in 1000000 5000000; do
    build/npusim_bench write-synthetic "$n" "$tmp/s$n.json"
    mb=$(echo "$(stat -c %s "$tmp/s$n.json") / 1000000" | bc)
    # Phases: load (build_s), estimate and simulate, in one process without writing outputs.
    /usr/bin/time -f "%e %M" -o "$tmp/time" build/npusim_bench load "$tmp/s$n.json" > "$tmp/load.json"
    read -r s kib < "$tmp/time"
    phases=$(python3 -c "import json; d=json.load(open('$tmp/load.json')); print(round(d['build_s'], 2), round(d['estimate_s'], 2), round(d['simulate_s'], 2))")
    read -r load_s est_s sim_s <<< "$phases"
    printf '%-44s %10s %12.1f\n' "  $n commands ($mb MB): load+estimate+simulate" "$s" "$(echo "$kib / 1024" | bc -l)"
    printf '%-44s %10s\n' "    load" "$load_s" "    estimate" "$est_s" "    simulate" "$sim_s"
    json="$json, \"file_${n}_bytes\": $(stat -c %s "$tmp/s$n.json"), \"file_${n}_load_s\": $load_s, \"file_${n}_estimate_s\": $est_s, \"file_${n}_simulate_s\": $sim_s"
    # The CLI end to end, outputs included: estimate for 1M, run for 5M.
    cmd=estimate
    if [ "$n" = 5000000 ]; then cmd=run; fi
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" "$cmd" "$tmp/s$n.json" -o "$tmp/out$n" -q
    read -r s kib < "$tmp/time"
    out_mb=$(du -sm "$tmp/out$n" | cut -f1)
    printf '%-44s %10s %12.1f\n' "  npusim $cmd, $n commands ($out_mb MB out)" "$s" "$(echo "$kib / 1024" | bc -l)"
    json="$json, \"file_${n}_${cmd}_wall_s\": $s, \"file_${n}_${cmd}_peak_rss_kib\": $kib, \"file_${n}_${cmd}_output_mb\": $out_mb"
    rm -rf "$tmp/out$n" "$tmp/s$n.json"
  done
fi

if "$bin" sweep --help >/dev/null 2>&1; then
  printf '\n%-44s %10s\n' "16-point ResNet-50 sweep, --jobs 2" "wall s"
  /usr/bin/time -f "%e" -o "$tmp/time" "$bin" sweep --model models/zoo/resnet50.json \
    --clock-mhz 400,600,800,1000 --slices 1,2,4,8 --jobs 2 --out "$tmp/sweep" >/dev/null 2>&1
  s=$(cat "$tmp/time")
  printf '%-44s %10s\n' "  4 clocks x 4 slice counts" "$s"
  json="$json, \"sweep16_resnet50_jobs2_wall_s\": $s"
fi

printf '\n%-44s %12s\n' "ResNet-50 traces (default config, level 70)" "MB"
for f in trace.json trace.pftrace; do
  bytes=$(stat -c %s "$tmp/r50-default/$f")
  printf '%-44s %12.2f\n' "  $f" "$(echo "$bytes / 1000000" | bc -l)"
  json="$json, \"resnet50_${f/./_}_bytes\": $bytes"
done

printf '\nCycles against the achievable bound (docs/compiler.md, "Targets")\n'
python3 scripts/bound_table.py "$bin" "$tmp/bounds.json" models/zoo/*.json \
  ../shared/models/onnx/*.onnx -- default server
json="$json, \"bounds\": $(cat "$tmp/bounds.json")"

printf '\nGoogle Benchmark (SystemC-free parts):\n'
build/npusim_gbench --benchmark_format=console --benchmark_out="$tmp/gbench.json" \
  --benchmark_out_format=json --benchmark_min_time=0.2 2>/dev/null | grep -E "^BM_|^Benchmark|^-"
json="$json, \"gbench\": $(cat "$tmp/gbench.json")}"
echo "$json" | python3 -m json.tool > "$out"
echo
echo "written to $out"
