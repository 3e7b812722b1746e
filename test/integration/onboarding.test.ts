// The first-run model offer (src/models/onboarding.ts) against a local hub that counts requests:
// nothing reaches the network before the user clicks Download, and any answer is remembered.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CATALOG } from '../../src/models/catalog';
import { downloadModels } from '../../src/inference/modelDownloader';
import { OFFER_CHOICES, ONBOARDED_KEY, offerRecommendedPair, type OnboardingHost } from '../../src/models/onboarding';
import { startModelServer } from '../support/modelServer';

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'test-output/onboarding');
/** Where the hub serves a catalog URI: its file at the revision it names (`#<commit>`). */
const hubPath = (uri: string) => {
  const [, user, repo, file, revision = 'main'] = /^hf:([^/]+)\/([^/]+)\/([^#]+)(?:#(.+))?$/.exec(uri)!;
  return `/${user}/${repo}/resolve/${revision}/${file}`;
};

describe('first-run model offer', () => {
  let hub: Awaited<ReturnType<typeof startModelServer>>;
  before(async () => {
    fs.rmSync(OUT, { recursive: true, force: true });
    // On an 8 GB machine without a GPU the offer is 1.5B + 0.5B; the local hub serves the tiny pair there.
    hub = await startModelServer({
      [hubPath(CATALOG.target15.uri)]: { file: path.join(ROOT, 'models/tiny-code-target.gguf') },
      [hubPath(CATALOG.draft05.uri)]: { file: path.join(ROOT, 'models/tiny-code-draft.gguf') },
    });
  });
  after(() => hub.close());

  /** A host answering `answer`, noting how many hub requests had been made when it was asked. */
  function host(stored: Map<string, unknown>, answer: (choices: string[]) => string | undefined) {
    const seen = { asked: 0, requestsWhenAsked: -1, configured: null as [string, string] | null, errors: [] as string[], choices: [] as string[], message: '' };
    const h: OnboardingHost = {
      state: { get: <T>(key: string) => stored.get(key) as T | undefined, update: async (key, value) => void stored.set(key, value) },
      machine: async () => ({ vramBytes: 0, ramBytes: 8e9 }),
      ask: async (message, ...choices) => {
        seen.asked++;
        seen.message = message;
        seen.choices = choices;
        seen.requestsWhenAsked = hub.requests.length;
        return answer(choices);
      },
      download: (uris) => downloadModels(uris, { dirPath: path.join(OUT, 'models'), huggingFaceEndpoint: `${hub.url}/` }),
      useModels: async (target, draft) => void (seen.configured = [target, draft]),
      showError: (message) => void seen.errors.push(message),
      log: () => undefined,
    };
    return { host: h, seen };
  }

  it('asks without contacting the network; "Not Now" sticks', async () => {
    const requestsBefore = hub.requests.length;
    const stored = new Map<string, unknown>();
    const first = host(stored, () => OFFER_CHOICES.later);
    await offerRecommendedPair(first.host);
    assert.equal(first.seen.asked, 1);
    assert.equal(first.seen.requestsWhenAsked - requestsBefore, 0, `requests before the answer: ${hub.requests.slice(requestsBefore).join(', ')}`);
    assert.equal(stored.get(ONBOARDED_KEY), true);
    const next = host(stored, () => assert.fail('asked again'));
    await offerRecommendedPair(next.host);
    assert.equal(next.seen.asked, 0);
    assert.deepEqual(hub.requests.slice(requestsBefore), [], 'no request at all');
  });

  it('closing the notification is an answer too: the next start does not ask again', async () => {
    const stored = new Map<string, unknown>();
    await offerRecommendedPair(host(stored, () => undefined).host);
    const next = host(stored, () => assert.fail('asked again'));
    await offerRecommendedPair(next.host);
    assert.equal(next.seen.asked, 0);
  });

  it('short buttons (a notification cuts long ones), the size and where to find the offer again in the message', async () => {
    const run = host(new Map(), () => undefined);
    await offerRecommendedPair(run.host);
    assert.deepEqual(run.seen.choices, [OFFER_CHOICES.download, OFFER_CHOICES.later]);
    // VS Code 1.100 cut "Download (2181 MB)", "Use embedded demo models" and "Don't ask again" to "Download (217…",
    // "Use embedded demo …" and "Don't ask a…" in three buttons; two buttons of 12 characters or fewer fit.
    for (const label of run.seen.choices) assert.ok(label.length <= 12, `"${label}" is ${label.length} characters`);
    assert.match(run.seen.message, /\(\d[\d.]* (MB|GB), /, 'the size is in the message');
    assert.match(run.seen.message, /Draftline: Get Recommended Models/, 'the message says where the offer stays');
  });

  it('the command asks again after any answer', async () => {
    const stored = new Map<string, unknown>([[ONBOARDED_KEY, true]]);
    const startup = host(stored, () => assert.fail('asked at startup after an answer'));
    await offerRecommendedPair(startup.host);
    assert.equal(startup.seen.asked, 0);
    const command = host(stored, () => OFFER_CHOICES.later);
    await offerRecommendedPair(command.host, { again: true });
    assert.equal(command.seen.asked, 1);
  });

  it('downloads the pair after the click, and only then', async () => {
    const requestsBefore = hub.requests.length;
    const stored = new Map<string, unknown>();
    const run = host(stored, (choices) => choices.find((c) => c === OFFER_CHOICES.download));
    await offerRecommendedPair(run.host);
    assert.equal(run.seen.requestsWhenAsked - requestsBefore, 0);
    assert.ok(
      hub.requests.slice(requestsBefore).some((r) => r.includes('qwen2.5-coder-0.5b-q8_0.gguf')),
      'downloaded after the click',
    );
    assert.deepEqual(run.seen.configured, [CATALOG.target15.uri, CATALOG.draft05.uri]);
    assert.deepEqual(run.seen.errors, []);
    assert.equal(stored.get(ONBOARDED_KEY), true);
  });
});
