// Package fakeopenai is a scripted fake of an OpenAI-compatible Chat
// Completions and Responses endpoint for tests. It runs on net/http/httptest (loopback
// only) and uses only the standard library, so any module's tests can use
// it without network access or credentials.
//
// # Use
//
//	srv := fakeopenai.NewServer()
//	defer srv.Close()
//	srv.Enqueue(
//		fakeopenai.Script(fakeopenai.Text("Hel", "lo"), fakeopenai.Usage(12, 3)),
//		fakeopenai.Script(fakeopenai.APIError(429, "slow down"), fakeopenai.Header("Retry-After", "1")),
//	)
//	// point the client at srv.URL() (it ends in /v1) ...
//	reqs := srv.Requests()
//
// Every POST to <URL>/chat/completions consumes the next enqueued Reply, in
// order. When none is left the server answers HTTP 500 with an OpenAI-style
// error body whose message is "fakeopenai: no scripted reply left". Other
// paths get 404 and other methods 405, both with OpenAI-style error bodies
// and without consuming a reply. Every request, whatever its path, is
// recorded (see Request) before it is answered; WaitRequests blocks until a
// number of them has arrived, so tests never need to sleep.
//
// GET <URL>/models answers 404 too, as on endpoints that list no models,
// until SetModels gives it a list to serve as an OpenAI model list. Those
// requests are recorded apart (ModelRequests), so that a client listing
// models does not shift the count of Requests and WaitRequests.
//
// # Replies
//
// A Reply is a list of Steps run in order. For a streaming request
// ("stream": true) each content step writes Server-Sent Events, one
// "data: <json>" event per delta, flushed as it is written (except Repeat,
// see below):
//
//   - Text(chunks...): one chat.completion.chunk per chunk, with
//     choices[0].delta.content set to it.
//   - ToolCall(id, name, fragments...): one event carrying the call's id,
//     type and function name (with empty arguments), then one event per
//     argument fragment. The calls of one Reply get the tool_calls index
//     0, 1, 2... in the order of their ToolCall steps.
//   - Finish(reason): an event with choices[0].finish_reason = reason.
//   - Event(json): one "data: <json>" event with the payload verbatim.
//   - Raw(bytes): bytes written verbatim (malformed SSE, an oversized event,
//     garbage, a "data: [DONE]" of one's own...).
//   - Repeat(n, chunk): n text deltas of chunk. The event is encoded once
//     and written n times without a flush per event, so 10,000 deltas cost
//     little; the step ends with one flush.
//   - Delay(d): wait d before the next step. Pace(d): wait d before every
//     later event. Waits end early when the client goes away or the server
//     closes.
//   - Hang(): stop here and block until the client goes away or the server
//     closes. Nothing after it is sent, not even the tail.
//
// Setting steps change the reply rather than write at their position:
//
//   - Header(k, v): a response header (for any reply, error or stream).
//   - Usage(in, out): the usage to report. It is sent in a final chunk with
//     "choices": [] and usage.prompt_tokens/completion_tokens/total_tokens,
//     only when the request asked for it with
//     "stream_options": {"include_usage": true}, as OpenAI does.
//   - NoDone(): drop the tail described below; the body just ends.
//   - Status(code, body) / APIError(code, message): make the reply a plain
//     HTTP response with that status and body (application/json); content
//     steps are ignored.
//
// After the last step, a streaming reply sends its tail: a finish_reason
// chunk unless a Finish step ran ("tool_calls" when the reply had tool
// calls, "stop" otherwise), then the usage chunk (see Usage), then
// "data: [DONE]". NoDone drops the whole tail; an explicit Finish step
// still runs where it is placed.
//
// A request without "stream": true gets one chat.completion JSON object
// built from the same script: the text chunks joined, the tool calls whole,
// the finish reason and the usage (always, since non-streaming responses
// always carry it). A non-streaming reply with Raw steps answers with
// their bytes alone; Delay waits and Hang hangs there too.
//
// The first event of a streamed reply carries delta.role = "assistant".
// Chunks carry id "chatcmpl-fake-<n>" (n counts chat requests from 1),
// object "chat.completion.chunk" and the request's model.
//
// Close unblocks every hanging or delaying handler before it shuts the
// httptest server down, so tests that use Hang do not leak goroutines.
//
// # The Responses wire
//
// A POST to <URL>/responses consumes the next Reply too (one queue serves
// both wires) and plays the same script as Responses events. Each event is
// "event: <type>" and "data: <json>" with a type and a sequence_number
// counting from 0:
//
//   - the reply opens with response.created and response.in_progress;
//   - Text opens a message item when none is open (output_item.added,
//     content_part.added) and sends response.output_text.delta per chunk;
//     Repeat does the same n times from one encoding (so its deltas share a
//     sequence_number);
//   - Citation(url, title) sends response.output_text.annotation.added with
//     a url_citation at the current end of the message text;
//   - ToolCall, WebSearch and the end of the reply close an open message
//     (output_text.done, content_part.done, output_item.done with the whole
//     text and its annotations);
//   - ToolCall sends a function_call item (id "fc_fake_<n>", call_id the
//     step's id): output_item.added, one function_call_arguments.delta per
//     fragment, function_call_arguments.done, output_item.done;
//   - WebSearch(query) sends a hosted web_search_call item: added, the
//     in_progress, searching and completed events, done with
//     action.query;
//   - Reasoning(summary, encrypted) sends a reasoning item (id
//     "rs_fake_<n>"): output_item.added with no encrypted content, the
//     reasoning_summary_part and reasoning_summary_text events of its one
//     summary_text part (none when summary is empty), output_item.done
//     with summary and encrypted_content (null when encrypted is empty);
//   - Event(json) sends the payload verbatim under the "event:" name of its
//     "type"; Raw, Delay, Pace, Hang, Header, Status and APIError work as on
//     the chat wire; Finish is ignored.
//
// The reply ends with response.completed, whose response holds every
// output item and, when a Usage step ran, usage.input_tokens,
// output_tokens and total_tokens (always, unlike the chat wire's
// include_usage). Incomplete(reason) makes it response.incomplete with
// incomplete_details.reason, Failed(code, message) response.failed with
// error; NoDone drops it. There is no "data: [DONE]". A request without
// "stream": true gets that final response object as JSON. Output items are
// numbered by output_index in order; message items have ids
// "msg_fake_<output_index>", web searches "ws_fake_<n>". The chat wire
// ignores WebSearch, Citation, Reasoning, Incomplete and Failed.
//
// A Responses request is recorded with Wire "responses" and decoded into
// Model, Stream, Instructions, Input (InputItem: messages, function_call,
// function_call_output and reasoning items; a string input is one user
// message) and
// Tools (every tool, hosted ones by Type without a Name).
package fakeopenai
