// The chat page: asks over the SSE stream, shows each validated sentence as it arrives, then the
// citations (click one to read the cited passage), the status badge and the per-node timing bar.
const $ = (id) => document.getElementById(id);
Ragline.bindTokenField($("token"));
const MARKER = /\s*\[C:([A-Za-z0-9_\-]+)\]/g;

// A code example arrives as one sentence: its fenced block, then its marker (on the next line, or on the
// closing fence's line as a model may write it); what follows the closing fence is shown as a sentence is.
const FENCED = /^(`{3,}|~{3,})[^\n]*\n([\s\S]*?)\n[ \t]*\1(?!`)/;

// A list item ("- ...", "1. ...") arrives as a sentence of its own, on its own line in the answer.
const ITEM = /^(?:[-*+]|\d{1,3}[.)])\s/;

// Inline code between ticks: as a model writes it, and as a quote keeps a code span that holds * or _ (a glob,
// a cron line, __init__.py), so the reader sees it is code.
// As CommonMark reads it: a run of ticks opens a span, the next run of as many closes it (`` ` `` holds a tick).
const INLINE_CODE = /(?<!`)(`+)(?!`)([^\n]+?)(?<!`)\1(?!`)/g;

function appendInline(node, text) {
  let last = 0;
  for (const match of text.matchAll(INLINE_CODE)) {
    const code = /^ .*[^ ].* $/.test(match[2]) ? match[2].slice(1, -1) : match[2];
    node.append(text.slice(last, match.index), Ragline.el("code", {}, code));
    last = match.index + match[0].length;
  }
  node.append(text.slice(last));
}

function sentenceNode(text) {
  const fenced = text.match(FENCED);
  if (fenced) {
    const node = Ragline.el("div", { class: "sentence code" }, Ragline.el("pre", {}, Ragline.el("code", {}, fenced[2])));
    node.append(...sentenceNode(text.slice(fenced[0].length)).childNodes);
    return node;
  }
  const node = Ragline.el("p", { class: ITEM.test(text) ? "sentence item" : "sentence" });
  let last = 0;
  for (const match of text.matchAll(MARKER)) {
    appendInline(node, text.slice(last, match.index));
    const cite = Ragline.el("span", { class: "cite", "data-chunk": match[1], title: "open the cited passage" }, "[source]");
    cite.addEventListener("click", () => showPassage(match[1]));
    node.append(cite);
    last = match.index + match[0].length;
  }
  appendInline(node, text.slice(last));
  return node;
}

async function showPassage(chunkId) {
  const box = $("passage");
  box.hidden = false;
  box.textContent = "loading…";
  try {
    const p = await Ragline.json("GET", `/v1/passages/${encodeURIComponent(chunkId)}`);
    box.textContent = "";
    box.append(Ragline.el("strong", {}, `${p.title} — ${p.heading_path.join(" › ")}`), "\n", p.text, "\n");
    box.append(Ragline.el("span", { class: "muted" }, p.source_uri + (p.anchor ? "#" + p.anchor : "")));
  } catch (err) {
    box.textContent = "cannot open the passage: " + err.message;
  }
}

// Feedback: one rating per reply (POST /v1/feedback), with the comment typed before the button.
let replyId = null;
function showFeedback(id) {
  replyId = id || null;
  $("feedback").hidden = !replyId;
  ["rate-up", "rate-down"].forEach((b) => ($(b).disabled = false));
  $("feedback-comment").value = "";
  $("feedback-state").textContent = "";
}

async function rate(rating) {
  if (!replyId) return;
  ["rate-up", "rate-down"].forEach((b) => ($(b).disabled = true));
  try {
    await Ragline.json("POST", "/v1/feedback", { reply_id: replyId, rating, comment: $("feedback-comment").value });
    $("feedback-state").textContent = "Thank you: your feedback was kept.";
  } catch (err) {
    $("feedback-state").textContent = `Not kept: ${err.message}`;
  }
}

// The conversation: each reply's conversation_id continues it; "New conversation" starts over.
let conversationId = null;
function addTurn(question, final) {
  conversationId = final.conversation_id || conversationId;
  const item = Ragline.el("li", {}, question);
  if (final.standalone_question && final.standalone_question !== question)
    item.append(Ragline.el("div", { class: "muted" }, `answered as: ${final.standalone_question}`));
  item.append(Ragline.el("div", { class: "muted" }, final.status.replace("_", " ")));
  $("thread").append(item);
  $("thread-card").hidden = false;
}

function newConversation() {
  conversationId = null;
  $("thread").textContent = "";
  $("thread-card").hidden = true;
  $("result").hidden = true;
}

function reset() {
  showFeedback(null);
  $("standalone").textContent = "";
  $("result").hidden = false;
  ["answer", "citations", "timings", "transcript", "cache"].forEach((id) => ($(id).textContent = ""));
  $("passage").hidden = true;
  $("status").className = "badge";
  $("status").textContent = "…";
}

function showFinal(final) {
  $("status").className = "badge " + final.status;
  $("status").textContent = final.status.replace("_", " ");
  $("cache").textContent = `cache ${final.cache} · ${final.generator || ""}`;
  if (!$("answer").children.length) $("answer").append(sentenceNode(final.answer || ""));
  (final.citations || []).forEach((c) => {
    const item = Ragline.el("li", { "data-chunk": c.chunk_id }, `${c.title} (${c.document_id}) — score ${c.score.toFixed(3)}`);
    item.addEventListener("click", () => showPassage(c.chunk_id));
    $("citations").append(item);
  });
  $("timings").append(Ragline.timingBar(final.timings_ms));
  showFeedback(final.reply_id);
  if (final.standalone_question && final.standalone_question !== $("question").value.trim())
    $("standalone").textContent = `Answered as: ${final.standalone_question}`;
}

function showError(message) {
  $("status").className = "badge error";
  $("status").textContent = "error";
  $("answer").append(Ragline.el("p", { class: "error-text" }, message));
}

async function ask() {
  const question = $("question").value.trim();
  if (!question) return;
  reset();
  $("ask").disabled = true;
  $("state").textContent = "thinking…";
  try {
    const response = await fetch("/v1/query/stream", {
      method: "POST",
      headers: Ragline.headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(conversationId ? { question, conversation_id: conversationId } : { question }),
    });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new Error((data.error && data.error.message) || response.statusText);
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (!data) continue;
        const event = JSON.parse(data);
        if (event.type === "sentence") $("answer").append(sentenceNode(event.text));
        else if (event.type === "final") {
          showFinal(event);
          addTurn(question, event);
        }
        else if (event.type === "error") showError(event.error.message);
      }
    }
  } catch (err) {
    showError(err.message);
  } finally {
    $("ask").disabled = false;
    $("state").textContent = "";
  }
}

// Voice: record with MediaRecorder (webm/opus in Chromium), send to /v1/voice/query.
let recorder = null;
async function toggleMic() {
  if (recorder) {
    recorder.stop();
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (err) {
    $("state").textContent = "microphone unavailable: " + err.message;
    return;
  }
  const chunks = [];
  recorder = new MediaRecorder(stream);
  recorder.ondataavailable = (e) => chunks.push(e.data);
  recorder.onstop = async () => {
    stream.getTracks().forEach((t) => t.stop());
    recorder = null;
    $("mic").textContent = "🎤 Speak";
    reset();
    $("state").textContent = "transcribing…";
    const form = new FormData();
    form.append("audio", new Blob(chunks, { type: "audio/webm" }), "question.webm");
    try {
      const response = await fetch("/v1/voice/query", { method: "POST", headers: Ragline.headers(), body: form });
      const data = await response.json();
      if (!response.ok) throw new Error(data.error ? data.error.message : response.statusText);
      $("transcript").textContent = `“${data.transcript.text}” (${data.transcript.language})`;
      $("question").value = data.transcript.text;
      showFinal(data);
    } catch (err) {
      showError(err.message);
    } finally {
      $("state").textContent = "";
    }
  };
  recorder.start();
  $("mic").textContent = "■ Stop";
  $("state").textContent = "listening…";
}

$("ask").addEventListener("click", ask);
$("mic").addEventListener("click", toggleMic);
$("new-conversation").addEventListener("click", newConversation);
$("rate-up").addEventListener("click", () => rate("up"));
$("rate-down").addEventListener("click", () => rate("down"));
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    ask();
  }
});
