# Mean µs of each op of a replayed decode step, from call 1's interval dumps (graph replay, PDL on; the marks cost
# the overlap between ops). Intervals of a decode step: 0 embed; 1 + 7 l .. 7 + 7 l layer l's norm1, q|k|v,
# attention (RoPE + KV store), o, norm2, gate|up (+ SiLU·mul), down; 113 final norm; 114 head; 115 the host's
# upload gap; 116 sampling.
import gzip, collections
names = ['norm1', 'q|k|v', 'attention', 'o', 'norm2', 'gate|up', 'down']
for n in (1, 64):
    steps = collections.defaultdict(list)
    for line in gzip.open(f'call1-dump-graph-b{n}.txt.gz', 'rt'):
        s, i, c, us = line.split()
        steps[int(s)].append(float(us))
    dec = [v for v in steps.values() if len(v) == 117][-127:]
    k = len(dec)
    tot = collections.Counter()
    for v in dec:
        for l in range(16):
            for j, nm in enumerate(names):
                tot[nm] += v[1 + 7 * l + j]
    print(f'{n} requests, {k} decode steps (the timed ones), µs per op:')
    print('   ' + '  '.join(f'{nm} {tot[nm] / k / 16:.2f}' for nm in names))
    print(f'   embed {sum(v[0] for v in dec) / k:.2f}  final norm {sum(v[113] for v in dec) / k:.2f}  head '
          f'{sum(v[114] for v in dec) / k:.2f}  sampling {sum(v[116] for v in dec) / k:.2f}  '
          f'sum of ops {sum(sum(v) - v[115] for v in dec) / k:.1f}')
