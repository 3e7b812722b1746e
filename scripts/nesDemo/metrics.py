# Quality of greedy next-edit outputs (eval_gguf.mjs) against the expected regions.
# usage: python3 metrics.py OUT.json
import sys, json, difflib
RS = '<|editable_region_start|>'
def parse(o):
    if RS not in o: return None
    t = o.split(RS, 1)[1]
    if t.startswith('\n'): t = t[1:]
    return t[:-1] if t.endswith('\n') else t
def changed(a, b):   # indices of lines of a that b does not keep (plus insertion points)
    s = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != 'equal': s.update(range(i1, max(i2, i1 + 1)))
    return s
rows = json.load(open(sys.argv[1])); agg = {}
for r in rows:
    reg, exp = r['region'].split('\n'), r['expected'].split('\n')
    p = parse(r['output']); k = r['kind']; a = agg.setdefault(k, dict(n=0, parsed=0, exact=0, nochange=0, right_lines=0, wrong_edit=0, keep_ok=0, keep_n=0, linecount_ok=0, tokens=0, ms=0))
    a['n'] += 1; a['tokens'] += r['tokens']; a['ms'] += r['ms']
    if p is None: continue
    P = p.split('\n'); a['parsed'] += 1; a['exact'] += p == r['expected']; a['nochange'] += p == r['region']
    a['linecount_ok'] += len(P) == len(exp)
    exp_changed = changed(reg, exp); keep = [i for i in range(len(reg)) if i not in exp_changed]
    sm = difflib.SequenceMatcher(None, reg, P, autojunk=False); kept = set()
    for b in sm.get_matching_blocks(): kept.update(range(b.a, b.a + b.size))
    a['keep_n'] += len(keep); a['keep_ok'] += sum(1 for i in keep if i in kept)     # unchanged lines reproduced exactly
    if p != r['region']:
        pc = changed(reg, P)
        if exp_changed and pc and pc <= {j for i in exp_changed for j in (i - 1, i, i + 1)}: a['right_lines'] += 1
        if p != r['expected']: a['wrong_edit'] += 1
tot = {}
for k, a in agg.items():
    for x, v in a.items(): tot[x] = tot.get(x, 0) + v
agg['all'] = tot
print(f"{'kind':9} {'n':>3} {'parsed':>6} {'exact':>6} {'copy':>6} {'rightLn':>7} {'noChg':>6} {'wrongEd':>7} {'lines=':>6} {'tok/s':>6}")
for k, a in agg.items():
    n = a['n']
    print(f"{k:9} {n:3} {a['parsed']/n:6.0%} {a['exact']/n:6.0%} {a['keep_ok']/max(1,a['keep_n']):6.1%} {a['right_lines']/n:7.0%} {a['nochange']/n:6.0%} {a['wrong_edit']/n:7.0%} {a['linecount_ok']/n:6.0%} {a['tokens']/(a['ms']/1000):6.1f}")
json.dump(agg, open(sys.argv[1].replace('.json', '.metrics.json'), 'w'), indent=1)
