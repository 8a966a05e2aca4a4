"""What ``locust -f locustfiles/locustfile.py`` loads: tokenswarm's LLM user, ready to run.

    locust -f locustfiles/locustfile.py --host http://127.0.0.1:8080 \\
        --dataset ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 1000 --max-tokens 256 \\
        --headless -u 32 -r 32

``--mode multi_turn`` runs ``ShareGPTConversationUser`` instead (one conversation per user, turn by
turn); ``multiturn.select_user_classes`` picks the class at init, on the local runner or master.

Debug one user without Locust's runner: ``python locustfiles/locustfile.py`` (``run_single_user``).
"""

from locust import events, run_single_user, task

from locustfiles import events as tokenswarm_events
from locustfiles.multiturn import MultiTurnUser, select_user_classes
from locustfiles.stages import StagesShape  # noqa: F401 (Locust finds shapes here; off unless --stages)
from locustfiles.users import ChatStreamUser

tokenswarm_events.register(events)
events.init.add_listener(select_user_classes)


class ShareGPTChatUser(ChatStreamUser):
    """Closed loop: send the next prompt as soon as the last reply has ended."""

    @task
    def chat_completion(self) -> None:
        """``POST /v1/chat/completions`` with ``stream: true`` for the next prompt (``users.py`` times it)."""
        self.chat()


class ShareGPTConversationUser(MultiTurnUser):
    """``--mode multi_turn``: the next turn after the reply and the think time, then the next conversation."""

    @task
    def chat_completion(self) -> None:
        """The conversation's next turn, its history included, streamed and timed like a single prompt."""
        self.chat()


if __name__ == "__main__":
    run_single_user(ShareGPTChatUser)
