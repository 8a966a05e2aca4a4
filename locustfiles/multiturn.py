"""``MultiTurnUser``: one conversation per user, played turn by turn (``--mode multi_turn``).

Stage: load. Everything about a request (body, stream, timing, record, events) is ``ChatStreamUser``'s;
this user only decides what the next request is: the next turn of its conversation, after a think time,
until the conversation is done, then the dispenser's next conversation. Playing every turn on the same
user keeps the turns in order and one after another, so each turn's prompt starts with the previous
turn's prompt and reply: the prefix the server's prompt cache can serve (``cached_tokens``).
"""

from __future__ import annotations

from typing import Any

import gevent
from locust.env import Environment
from locust.runners import WorkerRunner

from locustfiles.conversations import HISTORY_DATASET, HISTORY_MODEL, MULTI_TURN, ThinkTime, turn_prompt
from locustfiles.dataset import Prompt
from locustfiles.records import OK, RequestRecord
from locustfiles.sse import StreamResult
from locustfiles.users import ChatStreamUser


class MultiTurnUser(ChatStreamUser):
    """Replays whole conversations: turn k sends turn k-1's messages, its reply and the next question.

    With ``--history model`` the reply in the history is the text the server streamed (a turn that
    failed keeps the dataset's reply, so the conversation goes on and every planned turn is sent);
    with ``dataset`` it is the conversation's own reply, so every run sends the same prompts.
    """

    abstract = True

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        opts = environment.parsed_options
        self.history = opts.history if opts is not None else HISTORY_DATASET
        self.think = ThinkTime.parse(opts.think_time) if opts is not None else ThinkTime()
        self.seed = opts.seed if opts is not None else 0
        self.time_scale = (getattr(opts, "time_scale", 0.0) or 1.0) if opts is not None else 1.0
        """A trace's speed: its sessions' pauses shrink with it."""
        self.collect_text = self.history == HISTORY_MODEL
        self.conversation: Prompt | None = None
        self.turn = 0
        self.replies: list[str | None] = []
        self._think_rng = self.think.rng(self.seed, 0)

    def next_prompt(self) -> Prompt | None:
        conversation = self.conversation
        if conversation is not None and self.turn + 1 < conversation.requests:
            pauses = conversation.pauses_s  # a trace's session: its own pause; else the think time
            gevent.sleep(pauses[self.turn] / self.time_scale if pauses else self.think.draw(self._think_rng))
            self.turn += 1
        else:
            conversation = self.conversation = super().next_prompt()
            self.turn, self.replies = 0, []
            if conversation is None:
                return None
            self._think_rng = self.think.rng(self.seed, conversation.index)
        return turn_prompt(conversation, self.turn, self.replies)

    def wait_until_due(self, prompt: Prompt) -> float | None:
        """A conversation is due as a whole: its first turn waits for its time, each later one for its pause."""
        return super().wait_until_due(prompt) if self.turn == 0 else None

    def stream_chat(self, prompt: Prompt, record: RequestRecord) -> StreamResult | None:
        assert self.conversation is not None
        if self.conversation.turns:  # a trace's single request played by this user is no conversation
            record.conversation, record.turn = self.conversation.conversation_id, self.turn
        if self.turn and self.history == HISTORY_MODEL:
            record.expected_prompt_tokens = None  # measured with the dataset's replies, not these
        # keep the reply's text only for a later turn to send: not a last turn's, not a trace's single request's
        self.collect_text = self.history == HISTORY_MODEL and self.turn + 1 < self.conversation.requests
        stream = super().stream_chat(prompt, record)
        if self.collect_text:
            self.replies.append(stream.text if stream is not None and record.status == OK else None)
        return stream


def select_user_classes(environment: Environment, **_kw: Any) -> None:
    """Keep the locustfile's user classes of ``--mode``: ``MultiTurnUser`` subclasses for
    multi_turn, the others for single.

    Runs at init on the process that dispatches users (local runner or master), so headless runs,
    the web UI and distributed runs all start the right class; a worker keeps every class, because
    the master names the class of each user it starts (and ``--mode`` reaches workers only at test
    start). Locust's own choices (class names on the command line, ``--class-picker``) still apply.
    """
    opts = environment.parsed_options
    if opts is None or isinstance(environment.runner, WorkerRunner):
        return
    multi = opts.mode == MULTI_TURN
    keep = [c for c in environment.user_classes if issubclass(c, MultiTurnUser) == multi]
    if not keep:
        names = ", ".join(c.__name__ for c in environment.user_classes) or "none"
        raise SystemExit(f"tokenswarm: --mode {opts.mode} has no user class to run (selected: {names}); "
                         f"multi_turn runs subclasses of locustfiles.multiturn.MultiTurnUser, single the others")
    environment.user_classes[:] = keep
