// cthreads.h runs a product's parts on worker threads of the C side, kept
// from one product to the next, for the parallel sections where the Go
// pool's parts, each a long cgo call, lose time to the runtime (see
// GemmPacked). Each cgo file that includes it gets a pool of its own (the
// state is static); only one of them may be in use in a process, or two
// pools would share the cores: today the AVX2 and AVX-512 GEMM files, of
// which init installs one.
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

enum { CT_MAX_PARTS = 64 };

// CT_SPIN_NS is how long an idle worker polls for its next part before it
// sleeps: long enough to catch the next product of a layer without a
// wake-up, short enough not to take a core from the Go sections between
// products for long.
#define CT_SPIN_NS 50000L

// ct_split is where part t of parts starts in [0, n): parts cover it
// without gaps or overlaps, their sizes differing by at most one.
static inline int ct_split(int t, int n, int parts) {
	return (int)((long long)t * n / parts);
}

typedef void (*ct_part_fn)(const void* job, int part, int parts);

// ct_slot is one worker's mailbox: go counts the parts given to it, so a
// worker runs each exactly once; asleep says it waits on cond. Slots are
// cache-line aligned, so workers polling their own do not share a line.
typedef struct {
	atomic_int go, asleep;
	pthread_mutex_t mu;
	pthread_cond_t cond;
} __attribute__((aligned(64))) ct_slot;

// The pool: workers 1..ct_workers (slot 0 is the caller), the job they
// run, and the parts not yet done. ct_mu is held by the caller for the
// whole of one ct_run.
static ct_slot ct_slots[CT_MAX_PARTS];
static int ct_workers;
static int ct_cannot_grow; // a worker failed to start: do not retry on every product
static pthread_mutex_t ct_mu = PTHREAD_MUTEX_INITIALIZER;
static ct_part_fn ct_fn;
static const void* ct_job;
static int ct_parts;
static atomic_int ct_left;

static long ct_now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static inline void ct_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

// ct_wait returns s->go once it differs from seen: polling for CT_SPIN_NS,
// then asleep on s->cond until ct_run signals it.
static int ct_wait(ct_slot* s, int seen) {
	long t0 = ct_now_ns();
	for (int spins = 1;; spins++) {
		int g = atomic_load_explicit(&s->go, memory_order_acquire);
		if (g != seen) return g;
		ct_relax();
		if (spins % 256 != 0 || ct_now_ns() - t0 < CT_SPIN_NS) continue;
		pthread_mutex_lock(&s->mu);
		atomic_store(&s->asleep, 1);
		while (atomic_load(&s->go) == seen) pthread_cond_wait(&s->cond, &s->mu);
		atomic_store(&s->asleep, 0);
		pthread_mutex_unlock(&s->mu);
		t0 = ct_now_ns();
	}
}

// ct_worker runs the parts given to slot v, for the life of the process.
static void* ct_worker(void* v) {
	ct_slot* s = v;
	int part = (int)(s - ct_slots);
	for (int seen = 0;;) { // go is 0 when the worker starts: ct_run gives parts after
		seen = ct_wait(s, seen);
		ct_fn(ct_job, part, ct_parts);
		atomic_fetch_sub_explicit(&ct_left, 1, memory_order_release);
	}
	return 0;
}

// ct_grow starts workers until there are want, under ct_mu; it stops at
// the first that cannot start, and tries no more after that.
static void ct_grow(int want) {
	for (; ct_workers < want && !ct_cannot_grow; ct_workers++) {
		ct_slot* s = &ct_slots[ct_workers + 1];
		pthread_t th;
		if (pthread_mutex_init(&s->mu, 0) != 0) {
			ct_cannot_grow = 1;
			return;
		}
		if (pthread_cond_init(&s->cond, 0) != 0) {
			pthread_mutex_destroy(&s->mu);
			ct_cannot_grow = 1;
			return;
		}
		if (pthread_create(&th, 0, ct_worker, s) != 0) {
			pthread_cond_destroy(&s->cond);
			pthread_mutex_destroy(&s->mu);
			ct_cannot_grow = 1;
			return;
		}
		pthread_detach(th);
	}
}

// ct_give hands the current job's part to the worker of slot s.
static void ct_give(ct_slot* s) {
	atomic_fetch_add_explicit(&s->go, 1, memory_order_seq_cst);
	if (atomic_load(&s->asleep)) {
		pthread_mutex_lock(&s->mu);
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->mu);
	}
}

// ct_run calls fn(job, i, parts) for i in [0, parts), part 0 on the calling
// thread and the others on the pool's workers, and returns 1 once every
// part has returned. Where fewer workers could be started, it runs the
// job in fewer parts (fn is told how many). It returns 0, having run
// nothing, when parts is out of [2, CT_MAX_PARTS], no worker could start,
// or another thread's job holds the workers: the caller then runs the job
// its own way rather than on one core or wait with a core idle.
static int ct_run(int parts, ct_part_fn fn, const void* job) {
	if (parts < 2 || parts > CT_MAX_PARTS) return 0;
	if (pthread_mutex_trylock(&ct_mu) != 0) return 0;
	ct_grow(parts - 1);
	if (parts > ct_workers + 1) parts = ct_workers + 1;
	if (parts < 2) { // no worker could start: the caller's own pool spreads the product
		pthread_mutex_unlock(&ct_mu);
		return 0;
	}
	ct_fn = fn;
	ct_job = job;
	ct_parts = parts;
	atomic_store(&ct_left, parts - 1);
	for (int i = 1; i < parts; i++) ct_give(&ct_slots[i]);
	fn(job, 0, parts);
	for (int spins = 1; atomic_load_explicit(&ct_left, memory_order_acquire) > 0; spins++) {
		ct_relax();
		if (spins % 4096 == 0) sched_yield(); // a worker descheduled on a busy machine needs the core
	}
	pthread_mutex_unlock(&ct_mu);
	return 1;
}

// ct_started and ct_hold are for the tests: how many workers run, and
// holding the pool as another caller's product would (1) or letting it go
// (0).
static int ct_started(void) { return ct_workers; }

static void ct_hold(int on) {
	if (on)
		pthread_mutex_lock(&ct_mu);
	else
		pthread_mutex_unlock(&ct_mu);
}

// ct_panels_fn is a packed-GEMM panels kernel: panels [p0, p1) of
// C = bias (+ C) + A·B, bias null or n values.
typedef void (*ct_panels_fn)(const float* A, int lda, int m, int k, const float* P, int p0, int p1, int n, float* C, int ldc, int acc, const float* bias);

// ct_panels_job is a product split by panels into parts for ct_panels.
typedef struct {
	ct_panels_fn kernel;
	const float *A, *P, *bias;
	float* C;
	int lda, m, k, panels, n, ldc, acc;
} ct_panels_job;

static void ct_panels_part(const void* v, int t, int parts) {
	const ct_panels_job* j = v;
	j->kernel(j->A, j->lda, j->m, j->k, j->P, ct_split(t, j->panels, parts), ct_split(t + 1, j->panels, parts), j->n, j->C, j->ldc, j->acc, j->bias);
}

// ct_panels runs kernel over panels [0, panels) in parts on the pool's
// workers (ct_run); 0: nothing ran.
static int ct_panels(ct_panels_fn kernel, const float* A, int lda, int m, int k, const float* P, int panels, int n, float* C, int ldc, int acc,
                     const float* bias, int parts) {
	ct_panels_job j = {kernel, A, P, bias, C, lda, m, k, panels, n, ldc, acc};
	return ct_run(parts, ct_panels_part, &j);
}
