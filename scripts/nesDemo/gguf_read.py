# Read a llama-arch GGUF written by ../shared/models/recipe/gpu/export_gguf.py back into the recipe's model.py
# (F32, F16 and Q8_0 tensors; Q8_0 dequantized). usage: from gguf_read import load_lm; m = load_lm(path, ctx)
import struct, sys, os, numpy as np
def read_gguf(path):
    buf = open(path, 'rb').read(); o = 0
    def u(fmt):
        nonlocal o; v = struct.unpack_from(fmt, buf, o); o += struct.calcsize(fmt); return v[0]
    def s():
        nonlocal o; n = u('<Q'); v = buf[o:o + n].decode('utf-8'); o += n; return v
    SZ = {0: '<B', 1: '<b', 2: '<H', 3: '<h', 4: '<I', 5: '<i', 6: '<f', 7: '<?', 10: '<Q', 11: '<q', 12: '<d'}
    def val(t):
        if t == 8: return s()
        if t == 9:
            et = u('<I'); n = u('<Q'); return [val(et) for _ in range(n)]
        return u(SZ[t])
    assert buf[:4] == b'GGUF'; o = 4; ver = u('<I'); nt = u('<Q'); nkv = u('<Q')
    kv = {}
    for _ in range(nkv):
        k = s(); t = u('<I'); kv[k] = val(t)
    infos = []
    for _ in range(nt):
        n = s(); nd = u('<I'); dims = [u('<Q') for _ in range(nd)]; t = u('<I'); off = u('<Q'); infos.append((n, dims, t, off))
    al = kv.get('general.alignment', 32); base = (o + al - 1) // al * al
    out = {}
    for n, dims, t, off in infos:
        cnt = int(np.prod(dims)); shape = list(reversed(dims)); p = base + off
        if t == 0: a = np.frombuffer(buf, np.float32, cnt, p)
        elif t == 1: a = np.frombuffer(buf, np.float16, cnt, p).astype(np.float32)
        elif t == 8:
            rec = np.frombuffer(buf, np.dtype([('d', '<f2'), ('qs', 'i1', 32)]), cnt // 32, p)
            a = (rec['qs'].astype(np.float32) * rec['d'].astype(np.float32)[:, None]).reshape(-1)
        else: raise ValueError(f'tensor type {t}')
        out[n] = a.reshape(shape).copy()
    return kv, out
def load_lm(path, ctx=None):
    import torch
    import shared_models; from model import Cfg, LM
    kv, t = read_gguf(path)
    c = Cfg(d=kv['llama.embedding_length'], n_layer=kv['llama.block_count'], n_head=kv['llama.attention.head_count'],
            ffn=kv['llama.feed_forward_length'], ctx=ctx or kv['llama.context_length'],
            eps=kv['llama.attention.layer_norm_rms_epsilon'], rope_base=kv['llama.rope.freq_base'])
    m = LM(c); sd = {'tok.weight': t['token_embd.weight'], 'norm.weight': t['output_norm.weight']}
    for i in range(c.n_layer):
        for gg, tt in [('attn_norm', 'attn_norm.weight'), ('attn_q', 'wq.weight'), ('attn_k', 'wk.weight'), ('attn_v', 'wv.weight'),
                       ('attn_output', 'wo.weight'), ('ffn_norm', 'ffn_norm.weight'), ('ffn_gate', 'w_gate.weight'),
                       ('ffn_up', 'w_up.weight'), ('ffn_down', 'w_down.weight')]:
            sd[f'blocks.{i}.{tt}'] = t[f'blk.{i}.{gg}.weight']
    m.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    return m, c
