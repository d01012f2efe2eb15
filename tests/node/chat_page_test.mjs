// The chat page at `k3 serve`'s / in headless Chromium (Debian's /usr/bin/chromium, driven by npm
// `playwright-core`): a message typed and sent streams back the same reasoning and answer that
// /v1/chat/completions gives for it, the API key is used and kept, Stop ends a stream.
// usage: node chat_page_test.mjs K3_BINARY MODEL.gguf CHROMIUM   (exit 0: every check passed)
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { runChecks, startServer } from './k3_server.mjs';

const [k3, model, executablePath] = process.argv.slice(2);
const apiKey = 'page-key';
const server = await startServer(k3, model, ['-t', '2', '--ctx-size', '2048', '--api-key', apiKey]);
// Root (as in CI containers) cannot use Chromium's sandbox.
const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
const page = await browser.newPage();
await page.goto(`${server.base}/`);

// What the API answers directly for the page's request (greedy, so the page must show the same).
async function direct(text, thinking, maxTokens) {
  const response = await fetch(`${server.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: text }], temperature: 0, max_tokens: maxTokens,
                           chat_template_kwargs: { thinking } }),
  });
  assert.equal(response.status, 200);
  return (await response.json()).choices[0].message;
}

async function settings({ key = apiKey, thinking = true, maxTokens = 12 }) {
  await page.fill('#api-key', key);
  await page.dispatchEvent('#api-key', 'change');
  await page.fill('#temperature', '0');
  await page.fill('#max-tokens', String(maxTokens));
  await page.setChecked('#thinking', thinking);
  await page.click('#clear');
}

// Sends `text` and waits until the answer has streamed in (Send is enabled again).
async function send(text) {
  await page.fill('#prompt', text);
  await page.click('#send');
  await page.waitForFunction(() => !document.getElementById('send').disabled && document.querySelector('.message.assistant'));
  return page.evaluate(() => ({
    reasoning: document.querySelector('.message.assistant details.reasoning div')?.textContent ?? null,
    content: document.querySelector('.message.assistant .content').textContent,
    error: document.querySelector('.message.error')?.textContent ?? null,
  }));
}

const checks = {
  async 'reasoning streams into its own collapsible block'() {
    await settings({ thinking: true });
    const shown = await send('Tell me about the sea');
    const expected = await direct('Tell me about the sea', true, 12);
    assert.equal(shown.error, null);
    assert.ok(expected.reasoning_content.length > 0, 'tiny-k3 reasons first');
    assert.equal(shown.reasoning, expected.reasoning_content);
    assert.equal(shown.content, expected.content);
    assert.equal(await page.locator('details.reasoning summary').textContent(), 'reasoning');
  },
  async 'the answer text streams in without thinking'() {
    await settings({ thinking: false });
    const shown = await send('Hello there');
    const expected = await direct('Hello there', false, 12);
    assert.ok(expected.content.length > 0, 'without thinking tiny-k3 answers in content');
    assert.equal(shown.content, expected.content);
    assert.equal(shown.reasoning, null);
  },
  async 'a wrong key shows the 401'() {
    await settings({ key: 'wrong' });
    const shown = await send('x');
    assert.match(shown.error ?? '', /^401: missing or wrong API key/);
  },
  async 'the key is kept across reloads'() {
    await settings({ key: apiKey });
    await page.reload();
    assert.equal(await page.inputValue('#api-key'), apiKey);
  },
  async 'Stop ends a long stream and the page can send again'() {
    // A prompt whose greedy answer runs to the limit (1900 tokens, most of the context): one that
    // ends by itself ("Write a long story" ends after 471 tokens, 0.2 s) can end before the click,
    // and its end cannot be told from a stop.
    await settings({ maxTokens: 1900, thinking: false });
    await page.fill('#prompt', 'Tell me a story');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelector('.message.assistant .content')?.textContent.length > 0);
    await page.click('#stop');
    await page.waitForFunction(() => !document.getElementById('send').disabled);
    assert.equal(await page.locator('.message.error').count(), 0);
    const metrics = await (await fetch(`${server.base}/metrics`, { headers: { Authorization: `Bearer ${apiKey}` } })).text();
    const generated = Number(metrics.split('\n').find((l) => l.startsWith('k3_generated_tokens_total ')).split(' ')[1]);
    assert.ok(generated < 12 * 3 + 1900, 'the stopped stream did not run to its limit');
  },
};

await runChecks(checks, server, () => browser.close());
