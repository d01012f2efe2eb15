// `k3 serve`'s OpenAI Responses API spoken to by the official client's `responses` (npm
// `openai`, pinned in package.json): plain input and instructions counted against the template
// rendered apart, streaming events numbered in order and equal to the whole answer, function
// tools round trip with function_call_output, json_schema answers validated by ajv, reasoning
// items out and back in, and the fields refused by name.
// usage: node responses_server_test.mjs K3_BINARY MODEL.gguf TEMPLATE.jinja   (exit 0: all passed)
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { runChecks, startServer, templatePromptTokens } from './k3_server.mjs';

const [k3, model, template] = process.argv.slice(2);
const server = await startServer(k3, model, ['-t', '2', '--parallel', '4', '--ctx-size', '2048']);
const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 });
const user = (content) => [{ role: 'user', content }];
const expectedTokens = (vars) => templatePromptTokens(k3, template, server, {}, vars);
const noReasoning = { reasoning: { effort: 'none' } };

const weatherParameters = { type: 'object', properties: { city: { enum: ['Paris', 'Rome'] }, unit: { enum: ['C', 'F'] } },
                            required: ['city', 'unit'], additionalProperties: false };
const weather = { type: 'function', name: 'get_weather', description: 'Weather in a city', parameters: weatherParameters };
const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
                                                    parameters: weatherParameters } };

const checks = {
  async plain() {
    const r = await client.responses.create({ model: 'k3', input: 'Hello', max_output_tokens: 8, temperature: 0, ...noReasoning });
    assert.equal(r.object, 'response');
    assert.match(r.id, /^resp_/);
    assert.ok(['completed', 'incomplete'].includes(r.status));
    if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(typeof r.output_text, 'string');
    for (const item of r.output) assert.equal(item.type, 'message');
    assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 8);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    assert.equal(r.usage.input_tokens, await expectedTokens({ messages: user('Hello'), thinking: false }));
  },

  async instructions() {
    const r = await client.responses.create({ model: 'k3', instructions: 'Answer in French.', input: 'Hello',
                                              max_output_tokens: 4 });
    assert.equal(r.instructions, 'Answer in French.');
    assert.equal(r.usage.input_tokens, await expectedTokens({
      messages: [{ role: 'system', content: 'Answer in French.' }, ...user('Hello')] }));
    // Input items with content parts and a developer message are the same prompt.
    const items = await client.responses.create({ model: 'k3', max_output_tokens: 4, input: [
      { role: 'developer', content: 'Answer in French.' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }] });
    assert.equal(items.usage.input_tokens, await expectedTokens({
      messages: [{ role: 'system', content: 'Answer in French.' }, { role: 'user', content: [{ type: 'text', text: 'Hello' }] }] }));
  },

  async streamEventsNumberedAndEqualToWholeAnswer() {
    const params = { model: 'k3', input: 'Tell me', max_output_tokens: 24, temperature: 0 };
    const whole = await client.responses.create(params);
    const events = [];
    for await (const event of await client.responses.create({ ...params, stream: true })) events.push(event);
    events.forEach((event, i) => assert.equal(event.sequence_number, i));
    assert.equal(events[0].type, 'response.created');
    assert.equal(events[1].type, 'response.in_progress');
    const last = events.at(-1);
    assert.equal(last.type, whole.status === 'completed' ? 'response.completed' : 'response.incomplete');
    assert.deepEqual(last.response.output, whole.output.map((item) => ({ ...item, id: item.id.replace(whole.id.slice(5), last.response.id.slice(5)) })));
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    const reasoning = events.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta).join('');
    assert.equal(text, whole.output_text);
    const wholeReasoning = whole.output.filter((i) => i.type === 'reasoning').map((i) => i.content[0].text).join('');
    assert.equal(reasoning, wholeReasoning);
    // Every item is added before its deltas and done after them.
    const added = new Set(), done = new Set();
    for (const e of events) {
      if (e.type === 'response.output_item.added') added.add(e.output_index);
      else if (e.type === 'response.output_item.done') done.add(e.output_index);
      else if (e.output_index !== undefined) assert.ok(added.has(e.output_index) && !done.has(e.output_index), e.type);
    }
    assert.equal(done.size, whole.output.length);
    const final = await client.responses.stream(params).finalResponse();
    assert.equal(final.output_text, whole.output_text);
  },

  // The schema admits finitely many answers, all far shorter than max_output_tokens.
  async functionToolsRoundTrip() {
    const validate = new Ajv({ strict: true }).compile(weatherParameters);
    for (const stream of [false, true]) {
      const params = { model: 'k3', input: 'Weather in Rome?', tools: [weather], tool_choice: 'required',
                       max_output_tokens: 300, ...noReasoning };
      const r = stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
      const calls = r.output.filter((i) => i.type === 'function_call');
      assert.equal(r.status, 'completed', JSON.stringify(r.output));
      assert.equal(calls.length, 1, JSON.stringify(r.output));
      assert.equal(r.output.length, 1, 'nothing but the call');
      assert.equal(calls[0].name, 'get_weather');
      assert.match(calls[0].call_id, /^call_/);
      assert.ok(validate(JSON.parse(calls[0].arguments)), calls[0].arguments);
    }
    const named = await client.responses.create({ model: 'k3', input: 'Weather?', tools: [weather], max_output_tokens: 300,
                                                  tool_choice: { type: 'function', name: 'get_weather' }, ...noReasoning });
    assert.deepEqual(named.output.map((i) => [i.type, i.name]), [['function_call', 'get_weather']]);
    // The call and its output go back as input items.
    const input = [
      { role: 'user', content: 'Weather in Paris?' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris","unit":"C"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '{"temp": 21}' },
    ];
    const r = await client.responses.create({ model: 'k3', input, tools: [weather], max_output_tokens: 4 });
    assert.equal(r.usage.input_tokens, await expectedTokens({ tools: [weatherTool], messages: [
      ...user('Weather in Paris?'),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"C"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' }] }));
  },

  async jsonSchemaFormatValidates() {
    const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 6 }, color: { enum: ['red', 'blue'] } },
                     required: ['name', 'color'], additionalProperties: false };
    const validate = new Ajv({ strict: true }).compile(schema);
    for (let i = 0; i < 4; ++i) {
      const r = await client.responses.create({ model: 'k3', input: 'A user as JSON', max_output_tokens: 300, ...noReasoning,
        text: { format: { type: 'json_schema', name: 'user', schema, strict: true } } });
      assert.equal(r.status, 'completed', JSON.stringify(r.output));
      assert.equal(r.text.format.type, 'json_schema');
      const answer = JSON.parse(r.output_text);
      assert.ok(validate(answer), `${r.output_text} ${JSON.stringify(validate.errors)}`);
    }
  },

  async reasoningItems() {
    const r = await client.responses.create({ model: 'k3', input: 'Think', max_output_tokens: 16, reasoning: { effort: 'high' } });
    assert.equal(r.output[0].type, 'reasoning', JSON.stringify(r.output));
    assert.equal(r.output[0].content[0].type, 'reasoning_text');
    assert.ok(r.output[0].content[0].text.length > 0);
    assert.equal(r.reasoning.effort, 'high');
    // A reasoning item and the answer's message go back as one assistant turn.
    const input = [{ role: 'user', content: 'Hi' },
                   { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'A greeting.' }] },
                   { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello!' }] },
                   { role: 'user', content: 'Bye' }];
    const back = await client.responses.create({ model: 'k3', input, max_output_tokens: 4 });
    assert.equal(back.usage.input_tokens, await expectedTokens({ messages: [
      ...user('Hi'), { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }], reasoning_content: 'A greeting.' },
      ...user('Bye')] }));
  },

  async refusedFields() {
    const refused = (params, pattern) => assert.rejects(client.responses.create({ model: 'k3', input: 'x', ...params }),
      (e) => e instanceof OpenAI.BadRequestError && pattern.test(e.message));
    await refused({ previous_response_id: 'resp_1' }, /previous_response_id/);
    await refused({ store: true }, /'store'/);
    await refused({ background: true }, /'background'/);
    await refused({ tools: [{ type: 'web_search' }] }, /tools\[0\].*web_search/);
    await refused({ input: [{ type: 'input_image' }] }, /input\[0\].*input_image/);
    await refused({ text: { format: { type: 'json_schema', name: 'x', schema: { type: 'string', pattern: 'a+' } } } }, /pattern/);
  },
};

await runChecks(checks, server);
