# Fetch consecutive npm versions of packages from the v3 training corpus (npm pack) and unpack them.
# usage: python3 fetch_pairs.py OUT_DIR   -> OUT_DIR/<pkg>@<ver>/package/...  and OUT_DIR/pairs.json
# Only packages of the v3 training corpus (../shared/models/recipe/gpu/README.md). Never the bench's corpus
# (preact, immer, hono, valibot, zustand, mitt) nor the held-out packages named by hash in build_corpus.py.
import json, os, subprocess, sys, hashlib, re, tarfile
from concurrent.futures import ThreadPoolExecutor
OUT = sys.argv[1]; os.makedirs(OUT, exist_ok=True)
TRAIN = ['express', 'axios', 'commander', 'mocha', 'sinon', 'chai', 'joi', 'yup', 'ajv', 'pg', 'ioredis', 'mongoose',
         'sequelize', 'fastify', 'marked', 'async', 'bluebird', 'uuid', 'ramda', 'redux', 'inquirer', 'socket.io',
         'cheerio', 'moment', 'mobx', 'graphql', 'lodash', 'rollup', 'date-fns', 'webpack-dev-server']
EVAL = ['knex', 'markdown-it', 'luxon']          # also training-corpus packages, but never in the fine-tune set
PAIRS_PER_PKG = 4
EXCLUDE = {'preact', 'immer', 'hono', 'valibot', 'zustand', 'mitt'}
HELD_OUT = {'09cfb82eede48129', '2076584e3f0868e7', '599cbda0758dff23', '6a2f04347d6d4f21', '8393fe74a82ce7c9', '8396d873a49de777', '8cf2711f2a3b2d27', 'a64cea542ca81109', 'c229560eae1ea60f'}
def excluded(n): return n in EXCLUDE or hashlib.sha256(n.encode()).hexdigest()[:16] in HELD_OUT
for p in TRAIN + EVAL: assert not excluded(p), p
def versions(pkg):
    v = json.loads(subprocess.run(['npm', 'view', pkg, 'versions', '--json'], capture_output=True, text=True, check=True).stdout)
    v = [x for x in v if re.fullmatch(r'\d+\.\d+\.\d+', x)]
    return v[-(PAIRS_PER_PKG + 1):]
def pack(pkg, ver):
    d = os.path.join(OUT, f'{pkg}@{ver}')
    if os.path.isdir(os.path.join(d, 'package')): return
    os.makedirs(d, exist_ok=True)
    r = subprocess.run(['npm', 'pack', f'{pkg}@{ver}', '--pack-destination', d, '--silent'], capture_output=True, text=True)
    tgz = [f for f in os.listdir(d) if f.endswith('.tgz')]
    if not tgz: print('FAIL', pkg, ver, r.stderr[:200]); return
    with tarfile.open(os.path.join(d, tgz[0])) as t:
        t.extractall(d, filter='data') if hasattr(tarfile, 'data_filter') else t.extractall(d)
        # some tarballs use another top folder than package/
    tops = [x for x in os.listdir(d) if os.path.isdir(os.path.join(d, x))]
    if 'package' not in tops and tops: os.rename(os.path.join(d, tops[0]), os.path.join(d, 'package'))
    os.remove(os.path.join(d, tgz[0]))
with ThreadPoolExecutor(6) as ex: vs = dict(zip(TRAIN + EVAL, ex.map(versions, TRAIN + EVAL)))
jobs = [(p, v) for p in vs for v in vs[p]]
with ThreadPoolExecutor(6) as ex: list(ex.map(lambda a: pack(*a), jobs))
pairs = [{'pkg': p, 'a': a, 'b': b, 'split': 'eval' if p in EVAL else 'train'} for p in vs for a, b in zip(vs[p], vs[p][1:])]
json.dump(pairs, open(os.path.join(OUT, 'pairs.json'), 'w'), indent=1)
print(len(pairs), 'pairs', sum(1 for x in pairs if x['split'] == 'train'), 'train')
