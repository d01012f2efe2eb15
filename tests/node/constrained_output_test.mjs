// Constrained decoding through the official OpenAI client (npm `openai`) against `k3 serve`:
// JSON-schema answers validated by an independent validator (npm `ajv`, pinned in package.json)
// for many seeds, json_object answers parsed by JSON.parse, chat logprobs in OpenAI's shape.
// usage: node constrained_output_test.mjs K3_BINARY MODEL.gguf   (exit 0: every check passed)
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { runChecks, startServer } from './k3_server.mjs';

const [k3, model] = process.argv.slice(2);
const server = await startServer(k3, model, ['-t', '2', '--parallel', '4', '--ctx-size', '1024']);
const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 });
const user = (content) => [{ role: 'user', content }];
const noThinking = { chat_template_kwargs: { thinking: false } };

// Every member bounded, so that even a random model's answer ends well inside max_tokens.
const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 6 },
    age: { type: 'integer' },
    admin: { type: 'boolean' },
    color: { enum: ['red', 'green', 'blue'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 2 },
    note: { anyOf: [{ type: 'null' }, { type: 'string', maxLength: 4 }] },
  },
  required: ['name', 'age', 'color'],
  additionalProperties: false,
};

const checks = {
  async jsonSchemaAnswersValidate() {
    const validate = new Ajv({ strict: true }).compile(schema);
    const seeds = Array.from({ length: 40 }, (_, i) => i + 1);
    for (let i = 0; i < seeds.length; i += 4) {
      await Promise.all(seeds.slice(i, i + 4).map(async (seed) => {
        const r = await client.chat.completions.create({
          model: 'k3', messages: user('Describe a user as JSON.'), max_tokens: 400, seed, ...noThinking,
          response_format: { type: 'json_schema', json_schema: { name: 'user', schema, strict: true } },
        });
        assert.equal(r.choices[0].finish_reason, 'stop', `seed ${seed}: the answer did not end`);
        const answer = JSON.parse(r.choices[0].message.content);
        assert.ok(validate(answer), `seed ${seed}: ${r.choices[0].message.content} ${JSON.stringify(validate.errors)}`);
      }));
    }
  },
  async jsonObjectAnswersParse() {
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({
        model: 'k3', messages: user('JSON please'), max_tokens: 300, seed, temperature: 0.7, ...noThinking,
        response_format: { type: 'json_object' },
      });
      if (r.choices[0].finish_reason !== 'stop') continue;  // a free object may run past max_tokens
      const value = JSON.parse(r.choices[0].message.content);
      assert.equal(typeof value, 'object');
      assert.ok(!Array.isArray(value) && value !== null);
    }
  },
  async thinkingStaysFreeAndTheContentIsConstrained() {
    const r = await client.chat.completions.create({
      model: 'k3', messages: user('Pick one'), max_tokens: 200, seed: 5, logit_bias: {},
      response_format: { type: 'json_schema', json_schema: { name: 'c', schema: { enum: ['red', 'green'] } } },
    });
    if (r.choices[0].finish_reason === 'stop') assert.ok(['red', 'green'].includes(JSON.parse(r.choices[0].message.content)));
  },
  async chatLogprobsHaveOpenAIsShape() {
    const r = await client.chat.completions.create({
      model: 'k3', messages: user('Hi'), max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3, ...noThinking,
    });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, r.usage.completion_tokens);  // an end token is not counted or reported
    for (const entry of content) {
      assert.equal(typeof entry.token, 'string');
      assert.ok(entry.logprob <= 0);
      assert.ok(Array.isArray(entry.bytes));
      assert.equal(entry.top_logprobs.length, 3);
      // Greedy: the sampled token is the most likely one.
      assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
      for (let i = 1; i < 3; i++) assert.ok(entry.top_logprobs[i].logprob <= entry.top_logprobs[i - 1].logprob);
    }
  },
  async unsupportedRequestsAreRefused() {
    const bad = (extra) => client.chat.completions.create({ model: 'k3', messages: user('x'), max_tokens: 2, ...extra });
    const is400 = (what) => (e) => e instanceof OpenAI.BadRequestError && e.message.includes(what);
    await assert.rejects(bad({ tool_choice: 'required' }), is400('required'));
    await assert.rejects(bad({ tools: [{ type: 'function', function: { name: 'f' } }],
                               tool_choice: { type: 'function', function: { name: 'g' } } }), is400("'g'"));
    await assert.rejects(bad({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: 'a+' } } } }),
                         is400('pattern'));
    await assert.rejects(bad({ store: true }), is400("'store'"));
  },
};

await runChecks(checks, server);
