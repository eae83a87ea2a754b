package retrieve

import (
	"context"
	"errors"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/models"
)

// reranker is what every cross-encoder method holds: the model, the
// latent service (started on first use) and what to release on Close.
type reranker struct {
	ce      *models.CrossEncoder
	enc     interface{ Close() error } // a transformer encoder to release, if any
	workers int                        // the latent scheduler's (engine.QueueWorkers of the backend)
	once    sync.Once
	svc     *models.LatentService
	err     error
}

// service starts the latent service once.
func (r *reranker) service() (*models.LatentService, error) {
	r.once.Do(func() { r.svc, r.err = models.NewLatentService(r.ce.Enc, engine.SchedulerOptions{Workers: r.workers}) })
	return r.svc, r.err
}

// Close stops the scheduler and releases the model.
func (r *reranker) Close(ctx context.Context) error {
	var errs []error
	if r.svc != nil {
		errs = append(errs, r.svc.Close(ctx))
	}
	if r.enc != nil {
		errs = append(errs, r.enc.Close())
	}
	return errors.Join(errs...)
}
