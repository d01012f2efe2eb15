// `k3 serve`'s Anthropic Messages API spoken to by the official client (npm `@anthropic-ai/sdk`,
// pinned in package.json): plain, system and multi-turn prompts counted against the template
// rendered apart, streaming events in order and equal to the whole answer, stop sequences, forced
// tool use validated by ajv, tool_result round trips, thinking blocks, count_tokens, errors in
// Anthropic's shape, and both ways of giving the API key.
// usage: node anthropic_server_test.mjs K3_BINARY MODEL.gguf TEMPLATE.jinja   (exit 0: all passed)
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';
import { runChecks, startServer, templatePromptTokens } from './k3_server.mjs';

const [k3, model, template] = process.argv.slice(2);
const apiKey = 'test-key';
const server = await startServer(k3, model, ['-t', '2', '--parallel', '2', '--ctx-size', '2048', '--api-key', apiKey]);
const client = new Anthropic({ baseURL: server.base, apiKey, maxRetries: 0 });
const user = (content) => [{ role: 'user', content }];
// What the chat template is given for a request without extended thinking.
const expectedTokens = (vars) =>
  templatePromptTokens(k3, template, server, { Authorization: `Bearer ${apiKey}` }, { thinking: false, ...vars });
const countTokens = async (params) => (await client.messages.countTokens({ model: 'k3', ...params })).input_tokens;
const promptTokens = (usage) => usage.input_tokens + usage.cache_read_input_tokens;

const weather = {
  name: 'get_weather', description: 'Weather in a city',
  input_schema: { type: 'object', properties: { city: { enum: ['Paris', 'Rome'] }, unit: { enum: ['C', 'F'] } },
                  required: ['city', 'unit'], additionalProperties: false },
};
const weatherTool = { type: 'function', function: { name: weather.name, description: weather.description,
                                                    parameters: weather.input_schema } };

// The text of an answer's text blocks.
const text = (message) => message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

const checks = {
  async plain() {
    const r = await client.messages.create({ model: 'k3', max_tokens: 8, messages: user('Hello'), temperature: 0 });
    assert.equal(r.type, 'message');
    assert.equal(r.role, 'assistant');
    assert.match(r.id, /^msg_/);
    assert.ok(['end_turn', 'max_tokens'].includes(r.stop_reason), r.stop_reason);
    assert.equal(r.stop_sequence, null);
    for (const block of r.content) assert.equal(block.type, 'text');
    assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 8);
    assert.equal(promptTokens(r.usage), await expectedTokens({ messages: user('Hello') }));
  },

  async systemPrompt() {
    const asString = await countTokens({ system: 'Answer in French.', messages: user('Hello') });
    const asBlocks = await countTokens({ system: [{ type: 'text', text: 'Answer in French.' }], messages: user('Hello') });
    assert.equal(asString, await expectedTokens({ messages: [{ role: 'system', content: 'Answer in French.' }, ...user('Hello')] }));
    assert.equal(asBlocks, asString);
    const r = await client.messages.create({ model: 'k3', max_tokens: 4, system: 'Answer in French.', messages: user('Hello') });
    assert.equal(promptTokens(r.usage), asString);
  },

  async multiTurn() {
    // Text blocks are chat's text parts, so the chat form is the same list.
    const messages = [...user('Hi'), { role: 'assistant', content: [{ type: 'text', text: 'Hello! How can I help?' }] },
                      ...user('Tell me a joke')];
    const r = await client.messages.create({ model: 'k3', max_tokens: 4, messages });
    assert.equal(promptTokens(r.usage), await expectedTokens({ messages }));
    assert.ok(promptTokens(r.usage) > await countTokens({ messages: user('Tell me a joke') }));
  },

  async streamEventsInOrderAndEqualToWholeAnswer() {
    const params = { model: 'k3', max_tokens: 24, messages: user('Tell me'), temperature: 0 };
    const whole = await client.messages.create(params);
    const events = [];
    for await (const event of await client.messages.create({ ...params, stream: true })) events.push(event);
    assert.equal(events[0].type, 'message_start');
    assert.equal(events.at(-1).type, 'message_stop');
    assert.equal(events.at(-2).type, 'message_delta');
    // Each block: start, deltas, stop, with indices counting up from 0.
    let open = -1, next = 0, streamed = '';
    for (const event of events.slice(1, -2)) {
      if (event.type === 'content_block_start') {
        assert.equal(open, -1, 'a block started inside another');
        assert.equal(event.index, next++);
        open = event.index;
      } else if (event.type === 'content_block_delta') {
        assert.equal(event.index, open);
        if (event.delta.type === 'text_delta') streamed += event.delta.text;
      } else {
        assert.equal(event.type, 'content_block_stop');
        assert.equal(event.index, open);
        open = -1;
      }
    }
    assert.equal(open, -1, 'a block was not stopped');
    assert.equal(streamed, text(whole));
    assert.equal(events.at(-2).delta.stop_reason, whole.stop_reason);
    assert.equal(events.at(-2).usage.output_tokens, whole.usage.output_tokens);
    // The SDK's own accumulation agrees.
    const final = await client.messages.stream(params).finalMessage();
    assert.deepEqual(final.content, whole.content);
  },

  async stopSequence() {
    const params = { model: 'k3', max_tokens: 24, messages: user('Count'), temperature: 0 };
    const whole = text(await client.messages.create(params));
    const stop = [...whole].slice(4, 7).join('');
    assert.ok(stop.length > 0, `answer too short: ${JSON.stringify(whole)}`);
    const r = await client.messages.create({ ...params, stop_sequences: [stop] });
    assert.equal(r.stop_reason, 'stop_sequence');
    assert.equal(r.stop_sequence, stop);
    assert.equal(text(r), whole.slice(0, whole.indexOf(stop)));
  },

  // The schema admits finitely many answers (enums, bounded whitespace), all far shorter than
  // max_tokens, so every forced call completes.
  async forcedToolUseIsValidForTheSchema() {
    const validate = new Ajv({ strict: true }).compile(weather.input_schema);
    for (const tool_choice of [{ type: 'any' }, { type: 'tool', name: 'get_weather' }]) {
      for (const stream of [false, true]) {
        const params = { model: 'k3', max_tokens: 300, tools: [weather], tool_choice, messages: user('Weather in Rome?') };
        const r = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
        assert.equal(r.stop_reason, 'tool_use', JSON.stringify(r));
        const uses = r.content.filter((b) => b.type === 'tool_use');
        assert.equal(uses.length, 1);
        assert.equal(uses[0].name, 'get_weather');
        assert.match(uses[0].id, /^toolu_/);
        assert.ok(validate(uses[0].input), `${JSON.stringify(uses[0].input)} ${JSON.stringify(validate.errors)}`);
      }
    }
  },

  async toolResultRoundTrip() {
    const messages = [
      ...user('Weather in Paris?'),
      { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris', unit: 'C' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"temp": 21}' },
                                { type: 'text', text: 'And tomorrow?' }] },
    ];
    const chat = [
      ...user('Weather in Paris?'),
      { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }],
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"C"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: '{"temp": 21}' },
      { role: 'user', content: [{ type: 'text', text: 'And tomorrow?' }] },
    ];
    assert.equal(await countTokens({ tools: [weather], messages }), await expectedTokens({ messages: chat, tools: [weatherTool] }));
    const r = await client.messages.create({ model: 'k3', max_tokens: 6, tools: [weather], messages });
    assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(r.stop_reason));
    // The result as text blocks is the same prompt.
    messages[2].content[0].content = [{ type: 'text', text: '{"temp": 21}' }];
    chat[2].content = [{ type: 'text', text: '{"temp": 21}' }];
    assert.equal(await countTokens({ tools: [weather], messages }), await expectedTokens({ messages: chat, tools: [weatherTool] }));
  },

  async thinkingBlocks() {
    const params = { model: 'k3', max_tokens: 1100, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: user('Think') };
    const r = await client.messages.create(params);
    assert.equal(r.content[0].type, 'thinking', JSON.stringify(r.content));
    assert.ok(r.content[0].thinking.length > 0);
    const final = await client.messages.stream(params).finalMessage();
    assert.equal(final.content[0].type, 'thinking');
    // Thinking on renders the template's thinking prompt; off (also the default) does not.
    const thinkingOn = await countTokens({ thinking: params.thinking, messages: user('Think') });
    assert.equal(thinkingOn, await templatePromptTokens(k3, template, server, { Authorization: `Bearer ${apiKey}` },
                                                        { thinking: true, messages: user('Think') }));
    assert.equal(await countTokens({ thinking: { type: 'disabled' }, messages: user('Think') }),
                 await expectedTokens({ messages: user('Think') }));
    const off = await client.messages.create({ model: 'k3', max_tokens: 16, messages: user('Think') });
    assert.ok(off.content.every((b) => b.type === 'text'), JSON.stringify(off.content));
    // Earlier thinking goes back to the template as the assistant's reasoning.
    const history = [...user('Hi'), { role: 'assistant', content: [{ type: 'thinking', thinking: 'A greeting.', signature: '' },
                                                                    { type: 'text', text: 'Hello!' }] }, ...user('Bye')];
    assert.equal(await countTokens({ messages: history }), await expectedTokens({ messages: [
      ...user('Hi'), { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }], reasoning_content: 'A greeting.' },
      ...user('Bye')] }));
  },

  async errorsInAnthropicShape() {
    const refused = async (params, pattern) => {
      await assert.rejects(client.messages.create(params), (e) => {
        assert.ok(e instanceof Anthropic.BadRequestError, String(e));
        assert.equal(e.error.type, 'error');
        assert.equal(e.error.error.type, 'invalid_request_error');
        assert.match(e.error.error.message, pattern);
        return true;
      });
    };
    await refused({ model: 'k3', messages: user('x') }, /max_tokens/);
    await refused({ model: 'k3', max_tokens: 4, messages: user('x'), service_tier: 'auto' }, /'service_tier'/);
    await refused({ model: 'k3', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] },
                  /messages\[0\]\.content\[0\].*image/);
    await refused({ model: 'k3', max_tokens: 4, messages: [{ role: 'system', content: 'x' }] }, /messages\[0\]\.role/);
    await refused({ model: 'k3', max_tokens: 4, messages: user('x'), tools: [weather], tool_choice: { type: 'tool', name: 'nope' } },
                  /nope/);
    await refused({ model: 'k3', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 100 }, messages: user('x') },
                  /budget_tokens/);
    await refused({ model: 'k3', max_tokens: 20000, messages: user('x') }, /context/);
  },

  async apiKeyHeaders() {
    const stranger = new Anthropic({ baseURL: server.base, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(stranger.messages.create({ model: 'k3', max_tokens: 4, messages: user('x') }), (e) => {
      assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
      assert.equal(e.error.error.type, 'authentication_error');
      return true;
    });
    const nobody = await fetch(`${server.base}/v1/messages/count_tokens`, { method: 'POST', body: '{}' });
    assert.equal(nobody.status, 401);
    const bearer = new Anthropic({ baseURL: server.base, apiKey: null, authToken: apiKey, maxRetries: 0 });
    const r = await bearer.messages.create({ model: 'k3', max_tokens: 4, messages: user('x') });
    assert.equal(r.type, 'message');
  },
};

await runChecks(checks, server);
