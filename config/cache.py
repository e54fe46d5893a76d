"""The Redis cache (CACHE_URL), with one Redis client per connection pool instead of one per cache call.

Django's backend makes a new `redis.Redis` for every get or set, and redis-py builds its table of ~170 reply
callbacks each time: about a fifth of a millisecond of CPU, paid by every annotator request when it reads its session
(benchmarks/hit_profile.py). A client is thread-safe and takes its connections from the pool, so one per pool serves
the whole process.
"""

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _ReusedClients(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(pool)
        if client is None:
            client = self._clients[pool] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _ReusedClients
