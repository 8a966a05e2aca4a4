"""What ``locust -f locustfiles/locustfile.py`` loads: tokenswarm's LLM user, ready to run.

    locust -f locustfiles/locustfile.py --host http://127.0.0.1:8080 \\
        --dataset ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 1000 --max-tokens 256 \\
        --headless -u 32 -r 32

Debug one user without Locust's runner: ``python locustfiles/locustfile.py`` (``run_single_user``).
"""

from locust import events, run_single_user

from locustfiles import events as tokenswarm_events
from locustfiles.users import ChatStreamUser

tokenswarm_events.register(events)


class ShareGPTChatUser(ChatStreamUser):
    """Closed loop: send the next prompt as soon as the last reply has ended."""


if __name__ == "__main__":
    run_single_user(ShareGPTChatUser)
