/*
 * leaky-server.c - a small simulated service for the leakscope demo.
 *
 * For about 1.5 s the main thread makes up requests, parses them, answers
 * from a cache or builds a response, and hands requests that need a
 * session to a worker thread.  Most memory is temporary and freed, but
 * three things stay behind, as they would in a real service:
 *
 *   - log_request() formats an access-log line with asprintf(), writes it
 *     and forgets to free it: one leaked string per request (grows).
 *   - the worker's handle_session() returns early when a token is
 *     rejected, without closing the session: one struct session per
 *     rejected request (grows).
 *   - the response cache holds up to CACHE_SLOTS entries and then stops
 *     inserting: outstanding, but bounded (not a leak).
 *
 * It runs 1.5 s, or the number of seconds given as its argument, and
 * writes one summary line on stdout.
 */
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RUN_MS 1500u
#define CACHE_SLOTS 64
#define QUEUE_LEN 32

struct request {
	unsigned id;
	unsigned user;
	char *method;
	char *path;
	char *query;
};

struct session {
	unsigned user;
	unsigned request;
	char token[48];
	char scratch[176];
};

struct cache_entry {
	char key[64];
	size_t len;
	char *body;
};

static struct cache_entry *cache[CACHE_SLOTS];
static unsigned cache_used;

static struct request *queue[QUEUE_LEN];
static unsigned q_head, q_tail;
static int q_closed;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;

static int log_fd = -1;
static unsigned rejected;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct request *parse_request(const char *line, unsigned id)
{
	struct request *r = calloc(1, sizeof(*r));
	char *copy = strdup(line);
	char *sp = strchr(copy, ' ');
	char *q = strchr(copy, '?');

	*sp = '\0';
	if (q)
		*q = '\0';
	r->id = id;
	r->method = strdup(copy);
	r->path = strdup(sp + 1);
	r->query = strdup(q ? q + 1 : "");
	r->user = (unsigned)strtoul(strstr(r->query, "user=") ?
				    strstr(r->query, "user=") + 5 : "0", NULL, 10);
	free(copy);
	return r;
}

static void free_request(struct request *r)
{
	free(r->method);
	free(r->path);
	free(r->query);
	free(r);
}

/* BUG (on purpose): the formatted line is never freed. */
__attribute__((noinline)) static void log_request(const struct request *r,
						   int status)
{
	char *line;

	if (asprintf(&line, "%u %s %s?%s -> %d\n", r->id, r->method, r->path,
		     r->query, status) < 0)
		return;
	if (write(log_fd, line, strlen(line)) < 0)
		return;
}

static struct cache_entry *cache_find(const char *key)
{
	for (unsigned i = 0; i < cache_used; i++)
		if (strcmp(cache[i]->key, key) == 0)
			return cache[i];
	return NULL;
}

/* Bounded: once full, new responses are simply not cached. */
__attribute__((noinline)) static void cache_put(const char *key,
						 const char *body, size_t len)
{
	if (cache_used == CACHE_SLOTS)
		return;
	struct cache_entry *e = malloc(sizeof(*e));
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->body = malloc(len);
	memcpy(e->body, body, len);
	e->len = len;
	cache[cache_used++] = e;
}

/* Grows a response buffer the way a real serializer would. */
static char *render_response(const struct request *r, size_t *len)
{
	size_t cap = 64, n = 0;
	char *buf = malloc(cap);

	for (unsigned i = 0; i < 20 + r->id % 50; i++) {
		char item[48];
		int k = snprintf(item, sizeof(item), "{\"item\":%u,\"user\":%u},",
				 i, r->user);
		if (n + (size_t)k + 1 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		memcpy(buf + n, item, (size_t)k);
		n += (size_t)k;
	}
	buf[n] = '\0';
	*len = n + 1;
	return buf;
}

static int handle_static(const struct request *r)
{
	struct cache_entry *hit = cache_find(r->path);
	size_t len;

	if (hit)
		return 200;
	char *body = render_response(r, &len);
	cache_put(r->path, body, len);
	free(body);
	return 200;
}

static int token_valid(const char *token, unsigned request)
{
	return request % 13 != 0 && token[0] != '\0';
}

/* BUG (on purpose): a rejected token returns without freeing s. */
__attribute__((noinline)) static int handle_session(const struct request *r)
{
	struct session *s = malloc(sizeof(*s));

	s->user = r->user;
	s->request = r->id;
	snprintf(s->token, sizeof(s->token), "tok-%08x", r->user * 2654435761u);
	if (!token_valid(s->token, r->id)) {
		__atomic_add_fetch(&rejected, 1, __ATOMIC_RELAXED);
		return 403;
	}
	size_t len;
	char *body = render_response(r, &len);
	free(body);
	free(s);
	return 200;
}

static void *worker_main(void *arg)
{
	for (;;) {
		pthread_mutex_lock(&q_lock);
		while (q_head == q_tail && !q_closed)
			pthread_cond_wait(&q_cond, &q_lock);
		if (q_head == q_tail) {
			pthread_mutex_unlock(&q_lock);
			return arg;
		}
		struct request *r = queue[q_head++ % QUEUE_LEN];
		pthread_cond_broadcast(&q_cond);
		pthread_mutex_unlock(&q_lock);

		log_request(r, handle_session(r));
		free_request(r);
	}
}

static void enqueue(struct request *r)
{
	pthread_mutex_lock(&q_lock);
	while (q_tail - q_head == QUEUE_LEN)
		pthread_cond_wait(&q_cond, &q_lock);
	queue[q_tail++ % QUEUE_LEN] = r;
	pthread_cond_broadcast(&q_cond);
	pthread_mutex_unlock(&q_lock);
}

static unsigned serve(unsigned run_ms)
{
	uint64_t end = now_ns() + (uint64_t)run_ms * 1000 * 1000;
	unsigned id = 0;

	while (now_ns() < end) {
		char line[128];
		unsigned user = (id * 7919u) % 500;
		id++;
		if (id % 4 == 0)
			snprintf(line, sizeof(line), "POST /session?user=%u", user);
		else
			snprintf(line, sizeof(line), "GET /items/%u?user=%u",
				 id % 97, user);
		struct request *r = parse_request(line, id);
		if (strcmp(r->path, "/session") == 0) {
			enqueue(r);
		} else {
			log_request(r, handle_static(r));
			free_request(r);
		}
		struct timespec pause = { 0, 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	return id;
}

/* leaky-server [SECONDS]: run that long (default 1.5 s), for the live
 * commands (report, check, attach) the user guide shows on it. */
int main(int argc, char **argv)
{
	pthread_t worker;
	char msg[128];
	unsigned run_ms = RUN_MS;

	if (argc > 1) {
		char *end;
		unsigned long s = strtoul(argv[1], &end, 10);
		if (*end != '\0' || end == argv[1] || s == 0 || s > 86400) {
			fprintf(stderr, "usage: leaky-server [SECONDS, 1-86400]\n");
			return 2;
		}
		run_ms = (unsigned)s * 1000u;
	}

	log_fd = open("/dev/null", O_WRONLY);
	if (log_fd < 0 || pthread_create(&worker, NULL, worker_main, NULL) != 0)
		return 1;
	unsigned served = serve(run_ms);
	pthread_mutex_lock(&q_lock);
	q_closed = 1;
	pthread_cond_broadcast(&q_cond);
	pthread_mutex_unlock(&q_lock);
	pthread_join(worker, NULL);
	int n = snprintf(msg, sizeof(msg),
			 "leaky-server: served %u requests, %u sessions rejected, "
			 "%u responses cached\n", served, rejected, cache_used);
	if (write(1, msg, (size_t)n) < 0)
		return 1;
	return 0;
}
