#!/usr/bin/env bash
# session 11 call 2: ragged m-blocks, order variants (base / idle only / idle+cheap-last / idle+rotation)
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
BIN=.device-carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/gpu.txt
FA4JIT_CACHE_DIR=/tmp/c-rot timeout 200 $BIN/runtime_test_gpu_forward "*several work tiles per CTA*","*: directp route" > $OUT/tests.log 2>&1; echo "tests exit $?"
grep -E "FAILED|^test cases|^assertions|All tests passed" -A2 $OUT/tests.log | head -20
ARGS="--routes nvfp8,directp --head-dims 64,128 --seqlens 2000,4096,8192 --causal 0 --reps 10 --json"
for pass in 1 2; do
  order="base idle last rot"; [ $pass = 2 ] && order="rot last idle base"
  for v in $order; do
    b=$BIN/fa4jit-$v; [ $v = rot ] && b=$BIN/fa4jit
    FA4JIT_CACHE_DIR=/tmp/c-$v timeout 150 $b bench $ARGS > $OUT/$v.$pass.jsonl 2> $OUT/$v.$pass.err; echo "$v pass $pass exit $?"
  done
done
python3 - $OUT <<'PY'
import json,sys,glob,collections
out=sys.argv[1]; d=collections.defaultdict(list)
for f in glob.glob(out+'/*.jsonl'):
    v=f.split('/')[-1].split('.')[0]
    for l in open(f):
        try: r=json.loads(l)
        except: continue
        if r.get('kind')!='fa4jit': continue
        d[(r['route'],r['head_dim'],r['seqlen'],v)].append(r['tflops'])
keys=sorted({k[:3] for k in d})
print('| route | D | seqlen | base | idle | last | rot | idle/base | last/base | rot/base |')
print('|---|---|---|---|---|---|---|---|---|---|')
for k in keys:
    m={v:sum(d[k+(v,)])/len(d[k+(v,)]) for v in ('base','idle','last','rot') if d[k+(v,)]}
    sp={v:'/'.join('%.0f'%x for x in d[k+(v,)]) for v in m}
    print('| %s | %d | %d | %s | %s | %s | %s | %.3f | %.3f | %.3f |'%(k+(sp['base'],sp['idle'],sp['last'],sp['rot'],m['idle']/m['base'],m['last']/m['base'],m['rot']/m['base'])))
PY
