"""tokenswarm's Locust side: users, SSE client, dataset, records. Imports stdlib, locust and gevent only."""
