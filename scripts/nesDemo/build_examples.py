# Next-edit examples in Zeta's prompt layout from real edits between consecutive npm versions (fetch_pairs.py),
# plus rename-propagation examples cut from the same packages' sources.
# usage: python3 build_examples.py PKGS_DIR OUT_DIR   -> OUT_DIR/{train,eval}.jsonl  {prompt, response, kind, path, region, expected}
# Prompt = Zed's Zeta (v1) layout: "### Instruction: ... ### User Edits: ... ### User Excerpt: ... ### Response:\n";
# the response repeats the excerpt's editable region rewritten, between the same markers, then "```" and end-of-text.
import os, sys, json, random, difflib, re, hashlib
from shared_models import TOKENIZER; from tok import Tokenizer
PK, OUT = sys.argv[1], sys.argv[2]; os.makedirs(OUT, exist_ok=True)
tk = Tokenizer.load(TOKENIZER)
INSTR = ('### Instruction:\nYou are a code completion assistant and your task is to analyze user edits and then rewrite an '
         'excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.\n\n')
RS, RE, CUR = '<|editable_region_start|>', '<|editable_region_end|>', '<|user_cursor_is_here|>'
MAX_TOKENS, MAX_HIST_TOKENS = 1024, 300
EXTS = ('.js', '.mjs', '.cjs', '.ts', '.tsx', '.jsx')
def ok_file(t):
    L = t.split('\n'); return len(L) >= 5 and max(len(l) for l in L) <= 200 and len(t) / len(L) <= 80 and '\x00' not in t

def event(path, diff): return f'User edited "{path}":\n```diff\n{diff}```\n'
def udiff(before, s, old, new, ctx=2):
    """unified diff of replacing before[s:s+len(old)] by new (lines), with ctx lines of context"""
    a0 = max(0, s - ctx); pre = before[a0:s]; post = before[s + len(old):s + len(old) + ctx]
    h = f'@@ -{a0 + 1},{len(pre) + len(old) + len(post)} +{a0 + 1},{len(pre) + len(new) + len(post)} @@\n'
    return h + ''.join(' ' + l + '\n' for l in pre) + ''.join('-' + l + '\n' for l in old) + ''.join('+' + l + '\n' for l in new) + ''.join(' ' + l + '\n' for l in post)

def render(path, events, lines, r0, r1, cur_line, cur_col, new_region_lines):
    ev = list(events)
    while ev and len(tk.encode('\n'.join(ev))) > MAX_HIST_TOKENS: ev.pop(0)        # oldest out first
    reg = lines[r0:r1]; reg = reg[:cur_line - r0] + [reg[cur_line - r0][:cur_col] + CUR + reg[cur_line - r0][cur_col:]] + reg[cur_line - r0 + 1:]
    excerpt = f'```{path}\n{RS}\n' + ''.join(l + '\n' for l in reg) + f'{RE}\n```'
    prompt = INSTR + '### User Edits:\n\n' + '\n'.join(ev) + '\n\n### User Excerpt:\n\n' + excerpt + '\n\n### Response:\n'
    response = f'```{path}\n{RS}\n' + ''.join(l + '\n' for l in new_region_lines) + f'{RE}\n```'
    return prompt, response

def hunks(a, b):
    ops = [o for o in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if o[0] != 'equal']
    merged = []
    for _, i1, i2, j1, j2 in ops:
        if merged and i1 - merged[-1][1] < 3: merged[-1] = [merged[-1][0], i2, merged[-1][2], j2]
        else: merged.append([i1, i2, j1, j2])
    return merged

rng = random.Random(0)
pairs = json.load(open(os.path.join(PK, 'pairs.json')))
seen = set(); data = {'train': [], 'eval': []}; stats = {}
def add(split, kind, path, prompt, response, region, expected):
    key = hashlib.sha1((region + '\x01' + expected).encode()).hexdigest()
    if key in seen: return
    n = len(tk.encode(prompt)) + len(tk.encode(response)) + 2
    if n > MAX_TOKENS: return
    seen.add(key); data[split].append(dict(prompt=prompt, response=response, kind=kind, path=path, region=region, expected=expected, ntok=n))
    stats[(split, kind)] = stats.get((split, kind), 0) + 1

def files_of(d):
    for dp, dn, fn in os.walk(d):
        if 'node_modules' in dp: continue
        for f in fn:
            if f.endswith(EXTS) and not f.endswith(('.d.ts', '.min.js', '.d.mts', '.d.cts')) and '.bundle.' not in f:
                yield os.path.relpath(os.path.join(dp, f), d)

for pr in pairs:
    da, db = (os.path.join(PK, f"{pr['pkg']}@{v}", 'package') for v in (pr['a'], pr['b']))
    if not (os.path.isdir(da) and os.path.isdir(db)): continue
    split = pr['split']
    for rel in sorted(set(files_of(da)) & set(files_of(db))):
        pa, pb = os.path.join(da, rel), os.path.join(db, rel)
        if os.path.getsize(pa) > 300_000 or os.path.getsize(pb) > 300_000: continue
        try: ta, tb = open(pa, encoding='utf-8').read(), open(pb, encoding='utf-8').read()
        except Exception: continue
        if ta == tb or not ok_file(ta) or not ok_file(tb): continue
        A, B = ta.split('\n'), tb.split('\n'); H = hunks(A, B)
        if not H or len(H) > 40: continue
        path = f"{pr['pkg']}/{rel}"
        cur = list(A); events = []; off = 0; picked = 0
        for hi, (i1, i2, j1, j2) in enumerate(H):
            s = i1 + off; old = A[i1:i2]; new = B[j1:j2]
            assert cur[s:s + len(old)] == old
            small = len(old) <= 8 and len(new) <= 8 and picked < 6
            if small:
                R = rng.randint(10, 14); lo = max(0, s + len(old) - R + (1 if not old else 0)); hi_ = min(s, len(cur) - R)
                if hi_ >= lo and len(cur) >= R:
                    r0 = rng.randint(lo, hi_); r1 = r0 + R
                    tgt = cur[r0:s] + new + cur[s + len(old):r1]
                    cl = min(max(s if rng.random() < 0.5 else s + rng.randint(-3, 3), r0), r1 - 1)
                    cc = rng.randint(0, len(cur[cl]))
                    p, r = render(path, events, cur, r0, r1, cl, cc, tgt)
                    add(split, 'real', path, p, r, '\n'.join(cur[r0:r1]), '\n'.join(tgt)); picked += 1
                    # a no-change example: a window elsewhere in the file, same history
                    if rng.random() < 0.25 and len(cur) > 3 * R:
                        for _ in range(5):
                            q0 = rng.randint(0, len(cur) - R)
                            if q0 + R < s - 5 or q0 > s + len(old) + 5:
                                cl = q0 + rng.randint(0, R - 1); p, r = render(path, events, cur, q0, q0 + R, cl, rng.randint(0, len(cur[cl])), cur[q0:q0 + R])
                                add(split, 'nochange', path, p, r, '\n'.join(cur[q0:q0 + R]), '\n'.join(cur[q0:q0 + R])); break
            events.append(event(path, udiff(cur, s, old, new))); events = events[-4:]
            cur[s:s + len(old)] = new; off += len(new) - len(old)
        assert cur == B

# rename propagation: rename one identifier at its first use (the history), the next edit renames the later uses in the window
KW = set('abstract any as async await boolean break case catch class const constructor continue debugger declare default delete do else enum export extends false finally for from function get if implements import in instanceof interface let module new null number of package private protected public readonly return require set static string super switch symbol this throw true try type typeof undefined var void while with yield'.split())
IDR = re.compile(r'(?<![\w$.])[A-Za-z_$][\w$]{2,}(?![\w$])')
SUFFIX = ['s', 'Id', 'Name', 'List', 'Value', 'Map', '2', 'Ref', 'Fn', 'Count']
for split in ('train', 'eval'):
    srcs = sorted({(pr['pkg'], pr['b']) for pr in pairs if pr['split'] == split})
    budget = {'train': 2500, 'eval': 60}[split]; made = 0; tries = 0
    allfiles = [(p, v, rel) for p, v in srcs for rel in files_of(os.path.join(PK, f'{p}@{v}', 'package'))]
    while made < budget and tries < budget * 20 and allfiles:
        tries += 1; p, v, rel = rng.choice(allfiles); fp = os.path.join(PK, f'{p}@{v}', 'package', rel)
        try: t = open(fp, encoding='utf-8').read()
        except Exception: continue
        if len(t) > 300_000 or not ok_file(t): continue
        L = t.split('\n'); R = rng.randint(10, 14)
        if len(L) < R + 4: continue
        r0 = rng.randint(2, len(L) - R); r1 = r0 + R
        names = {}
        for i in range(max(0, r0 - 8), r1):
            for m in IDR.finditer(L[i]):
                if m.group() not in KW: names.setdefault(m.group(), []).append(i)
        cands = [n for n, ls in names.items() if len([x for x in ls if x >= r0]) >= 2 and ls[0] < r1 - 1]
        if not cands: continue
        n = rng.choice(cands); first = names[n][0]
        new = rng.choice([n + rng.choice(SUFFIX), rng.choice(['new', 'next', 'my', 'cur']) + n[0].upper() + n[1:], n.lower() if n != n.lower() else n[:1].upper() + n[1:]])
        if new == n: continue
        sub = lambda s: re.sub(r'(?<![\w$.])' + re.escape(n) + r'(?![\w$])', new, s)
        cur = list(L); cur[first] = sub(L[first])
        tgt = [sub(l) for l in cur[r0:r1]]
        if tgt == cur[r0:r1]: continue
        path = f'{p}/{rel}'; ev = [event(path, udiff(L, first, [L[first]], [cur[first]]))]
        cl = first if r0 <= first < r1 else r0; cc = len(cur[cl]) if cl == first else 0
        pmt, r = render(path, ev, cur, r0, r1, cl, cc, tgt)
        before = len(data[split]); add(split, 'rename', path, pmt, r, '\n'.join(cur[r0:r1]), '\n'.join(tgt)); made += len(data[split]) - before

for split in data:
    rng.shuffle(data[split])
    with open(os.path.join(OUT, f'{split}.jsonl'), 'w') as f:
        for x in data[split]: f.write(json.dumps(x) + '\n')
    print(split, len(data[split]), 'examples', sum(x['ntok'] for x in data[split]), 'tokens')
print(stats)
