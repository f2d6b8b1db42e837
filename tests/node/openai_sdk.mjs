// The official OpenAI Node SDK as a client of `forge serve`, run by
// tests/unit/test_serve_cli.cpp as `node openai_sdk.mjs BASE_URL MODEL`:
// completions, chat, streaming equal to the whole response, and 32 concurrent
// streaming clients whose tokens equal those of sequential runs. Exits
// non-zero at the first mismatch.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });

// Text and token ids of a streamed completion or chat completion.
async function streamed(kind, params) {
  const api = kind === 'chat' ? client.chat.completions : client.completions;
  const stream = await api.create({ ...params, stream: true });
  let text = '';
  const ids = [];
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += (kind === 'chat' ? choice.delta?.content : choice.text) ?? '';
    ids.push(...(choice.token_ids ?? []));
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, ids, finish };
}

// Completions: non-streamed and streamed agree.
const params = { model, prompt: 'the cat sat on', max_tokens: 12, seed: 5 };
const whole = await client.completions.create(params);
assert.equal(whole.object, 'text_completion');
assert.equal(whole.choices.length, 1);
assert.equal(whole.usage.prompt_tokens > 0, true);
assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);
const s = await streamed('completion', params);
assert.equal(s.text, whole.choices[0].text);
assert.deepEqual(s.ids, whole.choices[0].token_ids);
assert.equal(s.finish, whole.choices[0].finish_reason);

// Chat: the same.
const chat = { model, messages: [{ role: 'user', content: 'hi there' }], max_tokens: 10, seed: 3 };
const reply = await client.chat.completions.create(chat);
assert.equal(reply.object, 'chat.completion');
assert.equal(reply.choices[0].message.role, 'assistant');
const cs = await streamed('chat', chat);
assert.equal(cs.text, reply.choices[0].message.content);
assert.deepEqual(cs.ids, reply.choices[0].token_ids);

// Models.
const models = await client.models.list();
assert.equal(models.data[0].id, model);

// Errors surface as the SDK's typed errors.
await assert.rejects(client.completions.create({ model, prompt: 'x', temperature: 9 }), (e) => {
  assert.equal(e.status, 400);
  assert.equal(e.param, 'temperature');
  return true;
});

// 32 concurrent streaming clients: the tokens of sequential runs.
const requests = Array.from({ length: 32 }, (_, i) => ({
  model,
  prompt: `story number ${i} begins`,
  max_tokens: 8 + (i % 5),
  seed: 1000 + i,
  ...(i % 4 === 0 ? { temperature: 0 } : {}),
}));
const sequential = [];
for (const r of requests) sequential.push(await streamed('completion', r));
const concurrent = await Promise.all(requests.map((r) => streamed('completion', r)));
for (let i = 0; i < requests.length; ++i) {
  assert.deepEqual(concurrent[i].ids, sequential[i].ids, `request ${i}`);
  assert.equal(concurrent[i].text, sequential[i].text, `request ${i}`);
}
console.log(`openai sdk: ok (${requests.length} concurrent streams)`);
