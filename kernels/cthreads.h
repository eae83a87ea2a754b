// cthreads.h runs a product's parts on threads the C side starts and joins
// itself, for the long parallel sections where the Go pool's parts, each
// a long cgo call, lose time to the runtime (see GemmPacked).
#include <pthread.h>

enum { CT_MAX_PARTS = 64 };

// ct_split is where part t of parts starts in [0, n): parts cover it
// without gaps or overlaps, their sizes differing by at most one.
static inline int ct_split(int t, int n, int parts) {
	return (int)((long long)t * n / parts);
}

typedef void (*ct_part_fn)(const void* job, int part, int parts);

typedef struct {
	ct_part_fn fn;
	const void* job;
	int part, parts;
} ct_task;

static void* ct_run_task(void* v) {
	const ct_task* t = v;
	t->fn(t->job, t->part, t->parts);
	return 0;
}

// ct_run calls fn(job, i, parts) for i in [0, parts), part 0 on the calling
// thread, and returns 1 once every part has returned. Parts whose thread
// cannot be started run on the calling thread. It returns 0, having run
// nothing, when parts is out of [2, CT_MAX_PARTS].
static int ct_run(int parts, ct_part_fn fn, const void* job) {
	if (parts < 2 || parts > CT_MAX_PARTS) return 0;
	pthread_t th[CT_MAX_PARTS];
	ct_task tasks[CT_MAX_PARTS];
	int started = 0;
	for (int i = 1; i < parts; i++) {
		tasks[i] = (ct_task){fn, job, i, parts};
		if (pthread_create(&th[i], 0, ct_run_task, &tasks[i]) != 0) break;
		started++;
	}
	for (int i = 1 + started; i < parts; i++) fn(job, i, parts);
	fn(job, 0, parts);
	for (int i = 1; i <= started; i++) pthread_join(th[i], 0);
	return 1;
}

// ct_panels_fn is a packed-GEMM panels kernel: panels [p0, p1) of C (+)= A·B.
typedef void (*ct_panels_fn)(const float* A, int lda, int m, int k, const float* P, int p0, int p1, int n, float* C, int ldc, int acc);

// ct_panels_job is a product split by panels into parts for ct_panels.
typedef struct {
	ct_panels_fn kernel;
	const float *A, *P;
	float* C;
	int lda, m, k, panels, n, ldc, acc;
} ct_panels_job;

static void ct_panels_part(const void* v, int t, int parts) {
	const ct_panels_job* j = v;
	j->kernel(j->A, j->lda, j->m, j->k, j->P, ct_split(t, j->panels, parts), ct_split(t + 1, j->panels, parts), j->n, j->C, j->ldc, j->acc);
}

// ct_panels runs kernel over panels [0, panels) in parts on threads of its
// own (ct_run); 0: nothing ran.
static int ct_panels(ct_panels_fn kernel, const float* A, int lda, int m, int k, const float* P, int panels, int n, float* C, int ldc, int acc, int parts) {
	ct_panels_job j = {kernel, A, P, C, lda, m, k, panels, n, ldc, acc};
	return ct_run(parts, ct_panels_part, &j);
}
