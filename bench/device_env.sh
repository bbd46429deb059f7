# Sourced by the device-call scripts (bench/device_call_*.sh): the carried wheels (.whl) installed into
# /tmp/site, and the environment every timed gamut process of those calls runs in (no server, caches in
# /tmp, the results folder $R under $OUT), OTHER_CODE (NEW and OLD: this code and it) and timeline_tables.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD/tests:$PWD/bench NUMBA_CACHE_DIR=/tmp/numba-cache PYTHONUNBUFFERED=1 GAMUT_SERVER=off PYTHONPYCACHEPREFIX=/tmp/pycache PATH=/tmp/site/bin:$PATH
unset PYTHONDONTWRITEBYTECODE
R=$OUT/r
mkdir -p "$R"
# OTHER_CODE: this PYTHONPATH with another code's src in place of this tree's (AB_SRC, default .data/ab/src:
# e.g. `git archive 904d5b3 src | tar -x -C .data/ab`), for the scripts that time one code against another.
OTHER_CODE=${PYTHONPATH/$PWD\/src/$PWD/${AB_SRC:-.data/ab/src}}
NEW=$PYTHONPATH OLD=$OTHER_CODE  # (the A/B scripts' two codes)
# timeline_tables: each $R/tl*.jsonl (a run's spans) as a table beside it (bench/timeline.py; no charts).
timeline_tables() {
  for f in $R/tl*.jsonl; do python3 bench/timeline.py $f --out ${f%.jsonl} --title $(basename $f .jsonl) >/dev/null 2>&1; done
  rm -f $R/*.png
}
