export FA4JIT_CACHE_DIR=/tmp/fa4jit-cache; B=.device-carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 $B/fa4jit bench --routes directp --head-dims 128 --seqlens 4096,16384 --causal 0 --variants default,thread-blocks+keys128+rows128,thread-blocks+keys128+rows128+stages4,thread-blocks+keys128+rows128+no-pingpong,thread-blocks+keys128+rows128+serial+pingpong,thread-blocks+keys128+serial,thread-blocks+keys128+serial+stages4 --reps 10 --json >> $OUT/bench.jsonl 2>>$OUT/bench.err
timeout 60 $B/fa4jit bench --routes directp --head-dims 64 --seqlens 4096,16384 --causal 0 --variants default,rows128,stages4,no-pingpong --reps 10 --json >> $OUT/bench.jsonl 2>>$OUT/bench.err
timeout 60 $B/fa4jit bench --routes directp --head-dims 256 --seqlens 4096,16384 --causal 0 --variants default,pingpong,stages3,quad-blocks --reps 10 --json >> $OUT/bench.jsonl 2>>$OUT/bench.err
python3 - <<'PY'
import json,os
o=os.environ['OUT']
for l in open(o+'/bench.jsonl'):
  r=json.loads(l); t=r.get('tflops')
  print(r['head_dim'],r['seqlen'],r['causal'],'%-50s'%r['variant'],t if t else r.get('error','')[:120])
PY
tail -3 $OUT/bench.err
