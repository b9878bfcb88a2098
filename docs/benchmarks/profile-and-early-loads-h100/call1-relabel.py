# Relabels call 1's dumped profile intervals (call1-dump-*.txt.gz: step, mark, class, us) with the classes of an eager
# decode step, which are right, and sums them per class (ms per step). Run in the folder holding the dumps.
import gzip,sys,collections
def load(f):
    steps=collections.defaultdict(list)
    for l in gzip.open(f,'rt'):
        s,i,c,us=l.split(); steps[int(s)].append((int(i),int(c),float(us)))
    return steps
for n in (1,64):
    eg=load(f'call1-dump-eager-b{n}.txt.gz')
    last=eg[max(eg)]; cls=[c for i,c,u in last]
    print('decode pattern len',len(cls),'first 10',cls[:10])
    for m in ('graph','eager'):
        st=load(f'call1-dump-{m}-b{n}.txt.gz')
        dec=[v for k,v in st.items() if len(v)==len(cls)][-127:]
        tot=[0]*6
        for v in dec:
            for (i,c,u),cc in zip(v,cls): tot[cc]+=u
        k=len(dec)
        print(f'b{n} {m:12s} steps {k}: '+' '.join(f'{nm} {t/k/1000:.3f}' for nm,t in zip(["lin","attn","norm","samp","other","gap"],tot)), f'sum {sum(tot)/k/1000:.3f}')
