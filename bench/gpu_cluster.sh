# Sourced by the device-call scripts that time a Dask cluster of this machine's GPUs (bench/dask_ab.sh,
# bench/threads_ab.sh), after bench/device_env.sh and with W set: a scheduler and workers started as
# docs/cluster.md tells users to (gamut's preload on the scheduler; one worker per GPU, seeing it alone, one
# thread, gamut's preload).
#   start_gpu_cluster PER ENV=VALUE... -- [worker arguments]   (PER workers per GPU; at least one ENV=VALUE)
#   stop_gpu_cluster
# start_gpu_cluster sets ADDR, the scheduler's address, once every worker has joined.
start_gpu_cluster() {
  local per=$1 envs=() n
  shift
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  n=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
  rm -f $W/s.json
  python3 -m distributed.cli.dask_scheduler --host 127.0.0.1 --port 0 --no-dashboard --scheduler-file $W/s.json \
    --preload gamut.dask_preload >/dev/null 2>&1 & CLUSTER_PIDS=($!)
  while [ ! -s $W/s.json ]; do sleep 0.2; done
  sleep 0.3
  for ((g = 0; g < n; g++)); do
    env "${envs[@]}" CUDA_VISIBLE_DEVICES=$g python3 -m distributed.cli.dask_worker --scheduler-file $W/s.json \
      --nworkers $per --nthreads 1 --name gpu$g --no-dashboard --host 127.0.0.1 --preload gamut.dask_preload "$@" \
      >/dev/null 2>&1 & CLUSTER_PIDS+=($!)
  done
  ADDR=$(python3 -c "
import json; from distributed import Client
c = Client(scheduler_file='$W/s.json', timeout=60); c.wait_for_workers($n * $per, timeout=180)
print(json.load(open('$W/s.json'))['address'])")
}

stop_gpu_cluster() {
  kill "${CLUSTER_PIDS[@]}" 2>/dev/null; sleep 2; kill -9 "${CLUSTER_PIDS[@]}" 2>/dev/null
  pkill -9 -f distributed.cli 2>/dev/null; CLUSTER_PIDS=(); sleep 1
}
