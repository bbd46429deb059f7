# Sourced by the device-call scripts that time whole scans of the transcriptome set (bench/threads_ab.sh,
# bench/heap_ab.sh), after bench/device_env.sh: the inputs in W=/tmp/w, N (GPUs) and ALL (0,1,...), FAST
# (the fast mode's flags), scan() (a scan of the miRNAs on CUDA), warm-up scans (the on-disk caches
# filled, fast and default mode), and three one-pair scans whose wall times go to $R/runs.txt ("startup"). scan_run NAME MODE
# ENV=VALUE... -- FLAGS: one whole scan of the set (fast or default mode) with its spans in $R/tl_NAME.jsonl,
# its wall time and whether its output is the first's of that mode in $R/runs.txt.
W=/tmp/w
python3 bench/transcriptome_inputs.py $W >/dev/null
N=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
ALL=$(seq -s, 0 $((N - 1)))
echo "$N GPUs ($ALL), $(nproc) cores${KIND:+, $KIND}" | tee -a $R/runs.txt
FAST="--noenergy --score-threshold 160"
scan() { python3 -m gamut scan $W/hsa.fa "$@" --device cuda; }
scan $W/warm.fa --gpus 0 -o $W/warm.tsv $FAST >/dev/null 2>&1; scan $W/warm.fa --gpus $ALL -o $W/warm.tsv $FAST
scan $W/warm.fa --gpus 0 -o $W/warm.tsv >/dev/null 2>&1  # default mode too: its energies' compiled code loaded once
for k in 1 2 3; do
  s=$(date +%s.%N); scan $W/q1.fa --gpus 0 -o $W/one.tsv; e=$(date +%s.%N)
  echo "startup $(python3 -c "print(f'{$e-$s:.2f}')")" | tee -a $R/runs.txt
done
# warm_other FLAGS: the other code's (OLD's) on-disk caches filled by a scan of the warm-up set with FLAGS.
warm_other() { PYTHONPATH=$OLD scan $W/warm.fa -o $W/warm.tsv "$@" >/dev/null 2>&1; }
declare -A FIRST
scan_run() {  # name, mode (fast|default), ENV=VALUE..., --, scan flags (one run)
  local name=$1 mode=$2 envs=(); shift 2
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local flags=$FAST; [ $mode = default ] && flags=""
  rm -f $W/o.tsv
  local s=$(date +%s.%N)
  env "${envs[@]}" GAMUT_TIMELINE=$R/tl_$name.jsonl python3 -m gamut scan $W/hsa.fa $W/tx.fa --device cuda "$@" $flags -o $W/o.tsv
  local rc=$? e=$(date +%s.%N) same=first
  if [ -z "${FIRST[$mode]-}" ]; then FIRST[$mode]=$name; mv $W/o.tsv $W/first_$mode.tsv
  else cmp -s $W/first_$mode.tsv $W/o.tsv && same=same || same=DIFFERS; fi
  echo "$name rc=$rc wall=$(python3 -c "print(f'{$e-$s:.2f}')") $same" | tee -a $R/runs.txt
}
