"""A loopback Discord and Slack that tests, the bench and `make dev` share: real HTTP, every request recorded.

    with FakeChat() as chat:
        settings = Settings(cue_channel="discord:100", discord_api_url=chat.discord_url, discord_bot_token=chat.token,
                            discord_public_key=chat.public_key, ...)
        ... a tick posts a cue: chat.messages() holds it with its buttons ...
        headers, body = chat.discord_press(message, "ev:1:2:confirm", user="42", roles=["900"])
        ... POST them to /integrations/discord/interactions ...

Outbound (what the engine's bot sends): Discord's `POST /channels/{id}/messages`, `PATCH
/channels/{id}/messages/{id}`, `PATCH /webhooks/{app}/{token}/messages/@original` and an interaction's
follow-up, `POST /webhooks/{app}/{token}` (one with `flags: 64` shown to its presser alone, under the message,
as `private()` reads it); Slack's
`chat.postMessage`, `chat.update`, `usergroups.users.list` (the members set in `groups`) and a press's
`response_url` (`/slack/respond/{token}`). The bot's token
is checked (a wrong one: Discord's 401, Slack's `invalid_auth`), so `revoke()` plays a token revoked mid-
event; `script()` queues answers (a 429 with its `retry_after`, a 500) for the next requests; `answer_late()`
makes the next post be taken at once and answered only after a delay (past the engine's deadline). A Discord
create with `nonce` and `enforce_nonce: true` is answered, as Discord does, with the message the bot created
with that nonce in the past NONCE_WINDOW_SECONDS (200, nothing new posted), whatever it has become since.

Inbound (what the platform sends the engine): a press signed as Discord signs it (Ed25519 over timestamp
and body, with this fake's own key: `public_key` is what DISCORD_PUBLIC_KEY is set to) or as Slack does
(v0 HMAC-SHA256 with `signing_secret`), a Slack press carrying the message as it stands whole (its `text` and
`blocks`) in JSON escaped as Slack escapes it (`\\uXXXX`, `\\/`), so its size is a real press's.
`serve_page(engine_url)` makes `GET /` a page of the messages with their buttons; pressing one signs the press
and sends it to the engine, as Discord would (make dev), as the page's gm (@mira) or, at `/?as=<name>`, as a
member without that role (@sam); a refusal's private answer (an ephemeral message: type 4, flags 64) shows under
its message to the one who pressed, as Discord shows it.
A modal the engine answers with (type 9: Skip's "Skip this step?") opens over the page for the one who pressed,
its reason field and Discord's Submit and Cancel: Submit signs its submission (`discord_modal_submit`, type 5,
carrying the message the button was on) and sends it; Cancel closes it, sending nothing, as Discord does.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import itertools
import json
import re
import threading
import time
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

APPLICATION_ID = "700000000000000001"
GUILD_ID = "800000000000000001"
TEAM_ID = "T0FAKE"
EPHEMERAL = 64  # a Discord message's flag: only the member who pressed sees it
NONCE_WINDOW_SECONDS = 300  # Discord's "past few minutes" of an enforced nonce
PAGE_STYLE = """
body { background: #313338; color: #dbdee1; font: 15px/1.4 system-ui, sans-serif; margin: 0; padding: 16px 24px; }
h1 { font-size: 16px; color: #f2f3f5; border-bottom: 1px solid #3f4147; padding-bottom: 12px; }
h1 small { color: #949ba4; font-weight: normal; margin-left: 8px; }
ul { list-style: none; padding: 0; margin: 0; }
.message { padding: 8px 0 12px; border-bottom: 1px solid #2b2d31; }
.author { color: #f2f3f5; font-weight: 600; }
.bot { background: #5865f2; color: #fff; font-size: 10px; border-radius: 3px; padding: 1px 4px; vertical-align: middle; }
.content { white-space: pre-wrap; margin: 2px 0 8px; }
.edited { color: #949ba4; font-size: 11px; }
.reply { color: #949ba4; font-size: 13px; }
.buttons form { display: inline; }
button { border: 0; border-radius: 3px; color: #fff; font: 14px system-ui, sans-serif; padding: 6px 16px; margin-right: 8px; }
button.primary { background: #5865f2; } button.secondary { background: #4e5058; }
.as { color: #949ba4; font-size: 13px; } .as a { color: #00a8fc; }
.ephemeral { background: #2b2d31; border-left: 3px solid #5865f2; margin-top: 6px; padding: 6px 10px; }
.only-you { color: #949ba4; font-size: 12px; margin-right: 6px; }
.backdrop { position: fixed; inset: 0; background: rgba(0, 0, 0, .7); display: flex; align-items: center; justify-content: center; }
.modal { background: #313338; border-radius: 8px; padding: 16px; width: 440px; }
.modal h2 { font-size: 20px; color: #f2f3f5; margin: 0 0 12px; }
.modal label { display: block; color: #b5bac1; font-size: 12px; font-weight: 700; margin: 12px 0 6px; }
.modal textarea { width: 100%; box-sizing: border-box; background: #1e1f22; color: #dbdee1; border: 0; border-radius: 3px; padding: 8px; }
.modal-actions { text-align: right; margin-top: 16px; }
"""


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    json: Any  # the body: JSON, or a form as a dict


@dataclass
class Posted:
    """A message as the fake keeps it: where, its id, its latest body (content or text, and its buttons)."""

    platform: str
    channel_id: str
    id: str
    body: dict[str, Any]
    edits: int = 0
    reply_to: str | None = None

    @property
    def text(self) -> str:
        return str(self.body.get("content") if self.platform == "discord" else self.body.get("text"))

    @property
    def custom_ids(self) -> list[str]:
        if self.platform == "discord":
            return [b["custom_id"] for row in self.body.get("components") or [] for b in row["components"]]
        return [e["action_id"] for block in self.body.get("blocks") or [] if block["type"] == "actions"
                for e in block["elements"]]


@dataclass(frozen=True)
class Scripted:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class FakeChat:
    def __init__(self, token: str = "bot-token-1", signing_secret: str = "slack-signing-secret"):  # noqa: S107 — a fake's
        self.token = token
        self.signing_secret = signing_secret
        self._key = Ed25519PrivateKey.generate()
        self.public_key = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._messages: dict[str, Posted] = {}
        self._tokens: dict[str, str] = {}  # an interaction's token -> the message it came from
        self._pressers: dict[str, str] = {}  # a Slack response_url's token -> the name of the user who pressed
        self._scripted: deque[Scripted] = deque()
        self._late: deque[float] = deque()  # the delays of the next posts' answers (`answer_late`)
        self._nonces: dict[str, tuple[str, float]] = {}  # an enforced nonce -> the message made with it, and when
        self._creating = threading.Lock()  # a nonce's check and the message made with it, one create at a time
        self._ids = itertools.count(900_000_000_000_000_001)
        self._engine_url: str | None = None
        self._names: dict[str, str] = {}  # a Discord user id -> the name a press gave it
        self._page_users: dict[str, tuple[str, list[str]]] = {}  # the page's members: name -> (user id, roles)
        self._private: list[tuple[str, str, str]] = []  # ephemeral answers: (message id, member's name, content)
        self._modals: dict[str, tuple[str, dict[str, Any]]] = {}  # a member's open modal: (message id, its data)
        self._page_name = ""  # the member the page presses as unless asked for another
        self.groups: dict[str, list[str]] = {}  # a Slack user group's id -> its members' user ids
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                member = (parse_qs(urlsplit(self.path).query).get("as") or [""])[0]
                self._answer(200, fake._page(member).encode(), "text/html; charset=utf-8")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def _handle(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path in ("/press", "/submit", "/cancel"):
                    form = parse_qs(raw.decode())
                    member = fake._from_page(self.path, form)
                    self.send_response(303)
                    self.send_header("Location", f"/?{urlencode({'as': member})}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, body, headers = fake._serve(method, self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                self._answer(status, json.dumps(body).encode(), "application/json", headers)

            def _answer(self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # a late answer: the engine stopped waiting for it
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.discord_url = f"{self.url}/discord/api/v10"
        self.slack_url = f"{self.url}/slack/api"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def __enter__(self) -> FakeChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ── what a test says and reads ──────────────────────────────────────
    def script(self, *answers: Scripted) -> None:
        with self._lock:
            self._scripted.extend(answers)

    def answer_late(self, seconds: float) -> None:
        """The next post (Discord's create, Slack's chat.postMessage) is taken at once, its message in the channel,
        and answered `seconds` later: past the engine's deadline, the engine never learns of it."""
        with self._lock:
            self._late.append(seconds)

    def revoke(self, new_token: str) -> None:
        """The bot's token is revoked: only `new_token` is taken from now on."""
        self.token = new_token

    def received(self, method: str | None = None, path: str = "") -> list[Received]:
        with self._lock:
            return [r for r in self._received if (method is None or r.method == method) and path in r.path]

    def messages(self, platform: str | None = None) -> list[Posted]:
        with self._lock:
            return [m for m in self._messages.values() if platform is None or m.platform == platform]

    def message(self, message_id: str) -> Posted:
        with self._lock:
            return self._messages[message_id]

    def private(self, message_id: str) -> list[tuple[str, str]]:
        """The private answers shown under a message: (the presser's name, what it said), oldest first."""
        with self._lock:
            return [(who, content) for shown_on, who, content in self._private if shown_on == message_id]

    # ── the platforms' side ─────────────────────────────────────────────
    def _serve(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {k: v[0] for k, v in parse_qs(raw.decode()).items()} if "form" in headers.get("content-type", "") else None
        with self._lock:
            self._received.append(Received(method, path, headers, body))
            scripted = self._scripted.popleft() if self._scripted else None
        if scripted is not None:
            return scripted.status, scripted.body, scripted.headers
        if path.startswith("/discord/api/v10/"):
            answer = self._discord(method, path.removeprefix("/discord/api/v10"), headers, body)
        elif path.startswith("/slack/"):
            answer = self._slack(path.removeprefix("/slack"), headers, body)
        else:
            return 404, {"message": "unknown"}, {}
        if method == "POST" and re.search(r"/channels/\d+/messages$|/chat\.postMessage$", path):
            with self._lock:
                late = self._late.popleft() if self._late else None
            if late is not None:
                time.sleep(late)  # taken already: only its answer comes late
        return answer

    def _discord(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
        original = re.fullmatch(r"/webhooks/(\d+)/([\w.-]+)/messages/@original", path)
        if original and method == "PATCH":
            message_id = self._tokens.get(original[2])
            if original[1] != APPLICATION_ID or message_id is None:
                return 404, {"message": "Unknown Webhook", "code": 10015}, {}
            return 200, self._edit(message_id, body), {}
        follow_up = re.fullmatch(r"/webhooks/(\d+)/([\w.-]+)", path)
        if follow_up and method == "POST":
            message_id = self._tokens.get(follow_up[2])
            if follow_up[1] != APPLICATION_ID or message_id is None:
                return 404, {"message": "Unknown Webhook", "code": 10015}, {}
            if not int(body.get("flags") or 0) & 64:
                return 200, {"id": self._post("discord", self.message(message_id).channel_id, body, None).id, **body}, {}
            with self._lock:
                self._private.append((message_id, self._pressers.get(follow_up[2], ""), str(body.get("content") or "")))
            return 200, {"id": str(next(self._ids)), **body}, {}
        if headers.get("authorization") != f"Bot {self.token}":
            return 401, {"message": "401: Unauthorized", "code": 0}, {}
        create = re.fullmatch(r"/channels/(\d+)/messages", path)
        if create and method == "POST":
            return self._create(create[1], body)
        edit = re.fullmatch(r"/channels/(\d+)/messages/(\d+)", path)
        if edit and method == "PATCH" and edit[2] in self._messages:
            return 200, self._edit(edit[2], body), {}
        return 404, {"message": "Unknown Message", "code": 10008}, {}

    def _create(self, channel_id: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A Discord create: a new message, or, for an enforced nonce the bot used in the window, the message made
        with it as it is now (Discord checks a nonce against every message of the same author, whatever the channel)."""
        nonce = body.get("nonce") if body.get("enforce_nonce") is True else None
        with self._creating:
            made = self._nonces.get(str(nonce)) if nonce is not None else None
            if made is not None and time.monotonic() - made[1] < NONCE_WINDOW_SECONDS:
                posted = self.message(made[0])
                return 200, {"id": posted.id, "channel_id": posted.channel_id, **posted.body}, {}
            reply = (body.get("message_reference") or {}).get("message_id")
            posted = self._post("discord", channel_id, body, reply)
            if nonce is not None:
                self._nonces[str(nonce)] = (posted.id, time.monotonic())
        return 200, {"id": posted.id, "channel_id": posted.channel_id, **body}, {}

    def _slack(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
        respond = re.fullmatch(r"/respond/([\w.-]+)", path)
        if respond:
            message_id = self._tokens.get(respond[1])
            if message_id is None:
                return 404, {"ok": False, "error": "expired_url"}, {}
            return self._respond(message_id, self._pressers.get(respond[1], ""), body)
        if headers.get("authorization") != f"Bearer {self.token}":
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        if path == "/api/chat.postMessage":
            posted = self._post("slack", body["channel"], body, body.get("thread_ts"))
            return 200, {"ok": True, "channel": posted.channel_id, "ts": posted.id}, {}
        if path == "/api/usergroups.users.list":
            members = self.groups.get(body.get("usergroup", ""))
            return 200, {"ok": True, "users": members} if members is not None else {"ok": False, "error": "no_such_subteam"}, {}
        if path == "/api/chat.update" and body.get("ts") in self._messages:
            self._edit(body["ts"], {k: v for k, v in body.items() if k not in ("channel", "ts")})
            return 200, {"ok": True, "ts": body["ts"]}, {}
        return 200, {"ok": False, "error": "message_not_found"}, {}

    def _respond(self, message_id: str, presser: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A body sent to a press's response_url, as Slack takes it: `replace_original: true` replaces the message;
        anything else is a new message, `response_type: in_channel` for the channel, else (ephemeral, the
        default) shown to the presser alone, under the message, the message itself left as it was."""
        if body.get("replace_original") is True:
            self._edit(message_id, {k: v for k, v in body.items() if k != "replace_original"})
        elif body.get("response_type") == "in_channel":
            self._post("slack", self.message(message_id).channel_id, {"text": body.get("text"), "blocks": body.get("blocks")}, None)
        else:
            with self._lock:
                self._private.append((message_id, presser, str(body.get("text") or "")))
        return 200, {"ok": True}, {}

    def _post(self, platform: str, channel_id: str, body: dict[str, Any], reply_to: str | None) -> Posted:
        number = next(self._ids)
        message_id = str(number) if platform == "discord" else f"{number // 10**6}.{number % 10**6:06d}"
        posted = Posted(platform, channel_id, message_id, body, reply_to=reply_to)
        with self._lock:
            self._messages[message_id] = posted
        return posted

    def _edit(self, message_id: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            posted = self._messages[message_id]
            posted.body = {**posted.body, **body}
            posted.edits += 1
            return {"id": posted.id, **posted.body}

    # ── presses, signed as the platforms sign them ──────────────────────
    def discord_interaction(self, message: Posted, custom_id: str, **who: Any) -> dict[str, Any]:
        """A press of the button `custom_id` on `message` (MESSAGE_COMPONENT, type 3)."""
        return self._interaction(3, message, {"custom_id": custom_id, "component_type": 2}, **who)

    def discord_modal_submit(self, message: Posted, modal: dict[str, Any], typed: dict[str, str] | None = None,
                             **who: Any) -> dict[str, Any]:
        """The submission (MODAL_SUBMIT, type 5) of the modal `modal` (a MODAL answer's data) that a button of
        `message` opened, with `typed` in its text inputs by custom_id: as Discord sends it, the modal's custom_id,
        each of its components given back with its id (numbered in order where the modal gave none) and a text
        input's value, and the message the button was on."""
        typed = typed or {}
        numbers = itertools.count(1)

        def given_back(component: dict[str, Any]) -> dict[str, Any]:
            back = {"type": component["type"], "id": component.get("id") or next(numbers)}
            if component["type"] == 4:
                back.update(custom_id=component["custom_id"], value=typed.get(component["custom_id"], ""))
            if "component" in component:
                back["component"] = given_back(component["component"])
            if "components" in component:
                back["components"] = [given_back(c) for c in component["components"]]
            return back

        data = {"custom_id": modal["custom_id"], "components": [given_back(c) for c in modal["components"]]}
        return self._interaction(5, message, data, **who)

    def _interaction(self, kind: int, message: Posted, data: dict[str, Any], *, user: str = "4242", name: str = "mira",
                     roles: list[str] | None = None, guild: str | None = GUILD_ID,
                     interaction_id: str | None = None) -> dict[str, Any]:
        token = f"itoken-{next(self._ids)}"
        with self._lock:
            self._tokens[token] = message.id
            self._pressers[token] = name
            self._names[user] = name
        who = {"user": {"id": user, "username": name, "global_name": name.capitalize()}}
        payload: dict[str, Any] = {
            "id": interaction_id or str(next(self._ids)), "application_id": APPLICATION_ID, "type": kind, "token": token,
            "version": 1, "channel_id": message.channel_id,
            "message": {"id": message.id, "channel_id": message.channel_id}, "data": data,
        }
        if guild is None:
            payload.update(who)  # a DM: the user, not a member
        else:
            payload.update(guild_id=guild, member={**who, "roles": roles or [], "nick": None})
        return payload

    def discord_signed(self, payload: dict[str, Any] | bytes, *, at: float | None = None,
                       timestamp: str | None = None) -> tuple[dict[str, str], bytes]:
        """`payload` signed as Discord signs an interaction, at `at` (now), or over the `timestamp` text given."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        timestamp = timestamp if timestamp is not None else str(int(time.time() if at is None else at))
        signature = self._key.sign(timestamp.encode() + body).hex()
        return {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": timestamp,
                "Content-Type": "application/json"}, body

    def slack_interaction(self, message: Posted, action_id: str, *, user: str = "U0MIRA", name: str = "mira",
                          team: str = TEAM_ID, trigger: str | None = None) -> dict[str, Any]:
        """A press of the button `action_id` on `message` (block_actions), as Slack sends it: the message as it
        stands whole (its `text` and its `blocks`, each block given its `block_id`), and the action with its label."""
        token = f"rtoken-{next(self._ids)}"
        with self._lock:
            self._tokens[token] = message.id
            self._pressers[token] = name
            shown = dict((self._messages.get(message.id) or message).body)
        blocks = [{**block, "block_id": block.get("block_id") or f"b{n}"} for n, block in enumerate(shown.get("blocks") or [])]
        pressed = next(({**element, "block_id": block["block_id"]} for block in blocks if block.get("type") == "actions"
                        for element in block.get("elements") or () if element.get("action_id") == action_id), {})
        action = {"type": "button", "action_id": action_id, "value": action_id, "block_id": pressed.get("block_id", "b"),
                  "action_ts": f"{time.time():.6f}",
                  **{k: pressed[k] for k in ("text", "style") if k in pressed}}
        return {
            "type": "block_actions", "trigger_id": trigger or f"{next(self._ids)}.1.abc",
            "user": {"id": user, "username": name, "name": name, "team_id": team}, "team": {"id": team, "domain": "fake"},
            "api_app_id": "A0FAKE", "token": "verification-token-unused",
            "channel": {"id": message.channel_id, "name": "cues"},
            "container": {"type": "message", "message_ts": message.id, "channel_id": message.channel_id, "is_ephemeral": False},
            "message": {"type": "message", "subtype": "bot_message", "text": shown.get("text") or "", "ts": message.id,
                        "bot_id": "B0FAKE", "app_id": "A0FAKE", "team": team, "blocks": blocks},
            "state": {"values": {}}, "response_url": f"{self.url}/slack/respond/{token}", "actions": [action],
        }

    def slack_signed(self, payload: dict[str, Any] | str, *, at: float | None = None) -> tuple[dict[str, str], bytes]:
        """`payload` signed as Slack signs a press (a string: sent as the JSON text it is); a dict is sent as Slack
        writes its JSON: every character past ASCII as a \\u escape (an emoji as a pair of them), every `/` as `\\/`,
        then form-encoded (the largest a payload's text can be)."""
        text = payload if isinstance(payload, str) else json.dumps(payload).replace("/", "\\/")
        body = urlencode({"payload": text}).encode()
        timestamp = str(int(time.time() if at is None else at))
        digest = hmac.new(self.signing_secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": f"v0={digest}",
                "Content-Type": "application/x-www-form-urlencoded"}, body

    # ── make dev: a page of the messages, whose buttons press ───────────
    def serve_page(self, engine_url: str, *, user: str, roles: list[str], name: str = "mira",
                   guest: tuple[str, str] = ("5151", "sam")) -> None:
        """`GET /` shows the messages; a button signs a press as `user` (`name`) with `roles` and sends it to the engine;
        at `/?as=<guest's name>`, as the guest (user id, name): a member of the server with no role."""
        self._engine_url = engine_url.rstrip("/")
        self._page_users = {name: (user, roles), guest[1]: (guest[0], [])}
        self._page_name = name

    def _page(self, member: str = "") -> str:
        """The channel as Discord draws it: oldest first, a reply under the message it answers, the buttons in a row,
        "(edited)" once edited, a private answer to the member pressing under its message ("Only you can see this").
        It reloads itself every 2 s (a message posted or edited shows without a click)."""
        member = member if member in self._page_users else self._page_name
        rows = []
        for m in sorted(self.messages(), key=lambda m: (len(m.id), m.id)):
            forms = "".join(
                f'<form method="post" action="/press"><input type="hidden" name="message" value="{m.id}">'
                f'<input type="hidden" name="as" value="{html.escape(member)}">'
                f'<button class="{"primary" if style == 1 else "secondary"}" name="custom_id" value="{html.escape(c)}">'
                f'{html.escape(label)}</button></form>'
                for c, label, style in zip(m.custom_ids, self._labels(m), self._styles(m), strict=True))
            reply = f'<div class="reply">↪ replying to message {m.reply_to}</div>' if m.reply_to else ""
            edited = ' <span class="edited">(edited)</span>' if m.edits else ""
            private = "".join(f'<div class="ephemeral"><span class="only-you">Only you can see this</span> '
                              f'{html.escape(self._mentions(content))}</div>'
                              for message_id, who, content in self._private if message_id == m.id and who == member)
            rows.append(f'<li class="message" id="m{m.id}">{reply}<div class="author">Event engine <span class="bot">BOT</span></div>'
                        f'<div class="content">{html.escape(self._mentions(m.text))}{edited}</div><div class="buttons">{forms}</div>'
                        f"{private}</li>")
        others = " · ".join(f'<a href="/?{urlencode({"as": name})}">press as @{html.escape(name)}'
                            f'{"" if roles else " (no role)"}</a>'
                            for name, (_, roles) in self._page_users.items() if name != member)
        with self._lock:
            modal = self._modals.get(member)
        pressing = (f'<p class="as">Pressing as <strong id="pressing-as">@{html.escape(member)}</strong>'
                    f'{"" if self._page_users.get(member, ("", [""]))[1] else " (no role)"} · {others}</p>' if member else "")
        refresh = "" if modal else "<meta http-equiv=refresh content=2>"  # an open modal keeps what is typed in it
        return (f"<!doctype html><meta charset=utf-8>{refresh}<title>Fake Discord</title>"
                f"<style>{PAGE_STYLE}</style><h1># cues <small>fake Discord, on loopback</small></h1>{pressing}"
                f"<ul>{''.join(rows) or '<li class=empty>no message yet</li>'}</ul>"
                f"{self._modal_html(member, modal[1]) if modal else ''}")

    @staticmethod
    def _modal_html(member: str, modal: dict[str, Any]) -> str:
        """A modal as Discord draws it over the channel: its title, its text, each text input under its label, and
        Discord's own Cancel and Submit."""
        def drawn(component: dict[str, Any], label: str | None = None) -> str:
            kind = component["type"]
            if kind == 10:
                return f'<p class="modal-text">{html.escape(component["content"])}</p>'
            if kind == 18:
                return drawn(component["component"], component["label"])
            if kind == 1:
                return "".join(drawn(c) for c in component["components"])
            if kind == 4:
                name = html.escape(component["custom_id"])
                tag = "textarea" if component.get("style") == 2 else "input"
                limit = f' maxlength="{component["max_length"]}"' if component.get("max_length") else ""
                return (f'<label for="modal-{name}">{html.escape(label or component.get("label") or name)}</label>'
                        f'<{tag} id="modal-{name}" name="{name}"{limit}{" required" if component.get("required", True) else ""}>'
                        + ("</textarea>" if tag == "textarea" else ""))
            return ""

        return (f'<div class="backdrop"><form class="modal" id="modal" method="post" action="/submit">'
                f'<input type="hidden" name="as" value="{html.escape(member)}">'
                f'<h2 id="modal-title">{html.escape(modal["title"])}</h2>{"".join(drawn(c) for c in modal["components"])}'
                '<div class="modal-actions"><button class="secondary" id="modal-cancel" formaction="/cancel" formnovalidate>'
                'Cancel</button><button class="primary" id="modal-submit">Submit</button></div></form></div>')

    def _mentions(self, text: str) -> str:
        """`<@id>` as Discord shows it: the member's name (those who pressed here are known by name)."""
        return re.sub(r"<@(\d+)>", lambda found: "@" + self._names.get(found[1], found[1]), text)

    @staticmethod
    def _styles(m: Posted) -> list[int]:
        if m.platform == "discord":
            return [b["style"] for row in m.body.get("components") or [] for b in row["components"]]
        return [1 if e.get("style") == "primary" else 2 for block in m.body.get("blocks") or []
                if block["type"] == "actions" for e in block["elements"]]

    @staticmethod
    def _labels(m: Posted) -> list[str]:
        if m.platform == "discord":
            return [b["label"] for row in m.body.get("components") or [] for b in row["components"]]
        return [e["text"]["text"] for block in m.body.get("blocks") or [] if block["type"] == "actions" for e in block["elements"]]

    def _from_page(self, path: str, form: dict[str, list[str]]) -> str:
        """What the member the page is acting as did there: a press of a button (`/press`), or their open modal
        submitted with what they typed (`/submit`) or cancelled (`/cancel`: Discord sends nothing); their name."""
        member = (form.get("as") or [""])[0]
        member = member if member in self._page_users else self._page_name
        with self._lock:
            modal = self._modals.pop(member, None) if path != "/press" else None
        if self._engine_url is None or (path != "/press" and (modal is None or path == "/cancel")):
            return member
        user, roles = self._page_users[member]
        if modal is not None:
            message = self.message(modal[0])
            typed = {name: values[0] for name, values in form.items() if name not in ("as", "message")}
            payload = self.discord_modal_submit(message, modal[1], typed, user=user, name=member, roles=roles)
        else:
            message = self.message(form["message"][0])
            payload = self.discord_interaction(message, form["custom_id"][0], user=user, name=member, roles=roles)
        self._send_to_engine(message, payload, member)
        return member

    def _send_to_engine(self, message: Posted, payload: dict[str, Any], member: str) -> None:
        headers, body = self.discord_signed(payload)
        request = urllib.request.Request(f"{self._engine_url}/integrations/discord/interactions", data=body,  # noqa: S310
                                         headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 — the loopback engine
                self._answered(message, json.loads(answer.read() or b"{}"), member)
        except OSError:
            pass

    def _answered(self, message: Posted, answer: dict[str, Any], member: str = "") -> None:
        """The engine's answer to a press, as Discord applies it: an UPDATE_MESSAGE replaces the message; an
        ephemeral CHANNEL_MESSAGE (type 4, flags 64: a refusal) shows to the member who pressed, under the message;
        a MODAL (type 9) opens over the page for that member alone."""
        if answer.get("type") == 7:
            self._edit(message.id, answer["data"])
        elif answer.get("type") == 9:
            with self._lock:
                self._modals[member] = (message.id, answer["data"])
        elif answer.get("type") == 4 and (answer.get("data") or {}).get("flags", 0) & EPHEMERAL:
            with self._lock:
                self._private.append((message.id, member, str(answer["data"].get("content") or "")))
