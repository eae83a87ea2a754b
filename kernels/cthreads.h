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
