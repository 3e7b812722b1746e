# Fine-tune an embedded GGUF model on next-edit examples, loss on the response only; wall-clock budget, cosine LR.
# usage: THREADS=2 python3 train.py BASE.gguf DATA_DIR OUT.pt MINUTES BATCH LR
import sys, os, time, math, json, random, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_read import load_lm; from common import encode_example, load_jsonl, batch_loss
base, data, out, minutes, B, lr = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
torch.set_num_threads(int(os.environ.get('THREADS', '2'))); torch.manual_seed(0)
m, c = load_lm(base, 1024); m.train()
tr = load_jsonl(os.path.join(data, 'train.jsonl')); rng = random.Random(0); rng.shuffle(tr)
ev = [encode_example(x) for x in load_jsonl(os.path.join(data, 'eval.jsonl'))[:12]]
decay = [p for p in m.parameters() if p.dim() == 2]; nodecay = [p for p in m.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.0}, {'params': nodecay, 'weight_decay': 0.0}], lr=lr, betas=(0.9, 0.95))
def evaluate():
    m.eval()
    with torch.no_grad():
        L = N = 0
        for i in range(0, len(ev), 4): l, n = batch_loss(m, ev[i:i + 4]); L += l.item(); N += n
    m.train(); return L / N
budget = minutes * 60; t0 = time.time(); step = toks = rtoks = 0; ema = None; log = []; i = 0; WARM = 10
while time.time() - t0 < budget:
    frac = (time.time() - t0) / budget
    cur = lr * min(1.0, (step + 1) / WARM) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
    for g in opt.param_groups: g['lr'] = cur
    exs = [encode_example(tr[(i + k) % len(tr)]) for k in range(B)]; i += B
    l, n = batch_loss(m, exs); loss = l / n
    opt.zero_grad(set_to_none=True); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
    step += 1; toks += sum(len(x) for x, _ in exs); rtoks += n
    ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
    if step % 5 == 0:
        el = time.time() - t0; print(f'step {step} ex {i} tok {toks} resp_tok {rtoks} loss {loss.item():.3f} ema {ema:.3f} lr {cur:.1e} {toks/el:.0f} tok/s {el:.0f}s', flush=True)
        log.append((step, i, toks, round(el), round(ema, 4)))
    if step % 40 == 0: torch.save({'cfg': c.__dict__, 'state': m.state_dict()}, out)
el = time.time() - t0
torch.save({'cfg': c.__dict__, 'state': m.state_dict()}, out)
res = dict(base=os.path.basename(base), steps=step, examples=i, tokens=toks, response_tokens=rtoks, seconds=round(el), final_ema=ema, eval_response_loss=evaluate(), log=log)
json.dump(res, open(out + '.json', 'w')); print(json.dumps({k: v for k, v in res.items() if k != 'log'}), flush=True)
