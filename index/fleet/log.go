package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// ErrForeign marks an index that is not the one the fleet's log starts
// from: following would apply the log to other documents.
var ErrForeign = errors.New("fleet: the index is not the fleet's")

// Log is one index's update stream and snapshot store. It is safe for
// concurrent use.
type Log struct {
	c     *Conn
	index string
	name  string // the stream's
	// id names this stream for good: its name and creation time (a
	// stream deleted and created again is another log).
	id     string
	subj   string
	stream jetstream.Stream
	objs   jetstream.ObjectStore
}

// OpenLog binds to the stream and snapshot store of the index name,
// creating them (with the connection's replication factor) when missing.
func (c *Conn) OpenLog(ctx context.Context, name string) (*Log, error) {
	l := &Log{c: c, index: name, name: streamName(name), subj: subject(name)}
	err := c.retry(ctx, "opening the update stream of "+name, func(ctx context.Context) error {
		s, err := c.js.Stream(ctx, l.name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = c.js.CreateStream(ctx, jetstream.StreamConfig{Name: l.name, Subjects: []string{l.subj},
				Description: "gleaner: the updates of index " + name, Storage: jetstream.FileStorage,
				Replicas: c.cfg.Replicas, Duplicates: dedupWindow, MaxMsgSize: int32(min(c.MaxPayload(), 1<<30))})
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				s, err = c.js.Stream(ctx, l.name)
			}
		}
		l.stream = s
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the update stream of index %q: %w", name, err)
	}
	l.id = streamID(l.name, l.stream.CachedInfo())
	err = c.retry(ctx, "opening the snapshot store of "+name, func(ctx context.Context) error {
		o, err := c.js.ObjectStore(ctx, bucketName(name))
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			o, err = c.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucketName(name),
				Description: "gleaner: snapshots of index " + name, Storage: jetstream.FileStorage, Replicas: c.cfg.Replicas})
			if errors.Is(err, jetstream.ErrBucketExists) {
				o, err = c.js.ObjectStore(ctx, bucketName(name))
			}
		}
		l.objs = o
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the snapshot store of index %q: %w", name, err)
	}
	return l, nil
}

// dedupWindow is how long the stream remembers a publish's id: a publish
// retried within it (its acknowledgement lost) is stored once.
const dedupWindow = 2 * time.Minute

// headerRoom is what a message's headers (its id, the expected stream)
// take of the cluster's size limit.
const headerRoom = 1024

// Index is the name of the log's index.
func (l *Log) Index() string { return l.index }

// Publish appends b to the log and returns its sequence once the stream
// has stored it (on a majority of its replicas). A publish that gets no
// acknowledgement (a node down, a leader being elected) is retried with
// the same id until ctx ends: the stream stores it once. A batch over the
// cluster's message size fails with live.ErrTooLarge, as a
// live.CheckError.
func (l *Log) Publish(ctx context.Context, b *live.Batch) (uint64, error) {
	a, err := l.PublishID(ctx, b, "")
	return a.Seq, err
}

// Ack is what the log answered a publish.
type Ack struct {
	Seq uint64
	// Duplicate: the log already held a batch of this id (a retry); Seq
	// is that batch's.
	Duplicate bool
}

// PublishID is Publish with the caller's id for the batch ("" for a new
// one): a batch published again with the same id within two minutes
// (the stream's dedup window) is stored once, and its first sequence
// returned; so a client may retry a write whose answer it lost.
func (l *Log) PublishID(ctx context.Context, b *live.Batch, id string) (Ack, error) {
	payload, err := b.MarshalBinary()
	if err != nil {
		return Ack{}, fmt.Errorf("fleet: encoding the batch: %w", err)
	}
	if max := l.c.MaxPayload() - headerRoom; int64(len(payload)) > max {
		fit := int64(b.Len()) * max / int64(len(payload))
		return Ack{}, &live.CheckError{Err: fmt.Errorf("the batch takes %d bytes with its vectors, over the NATS cluster's message limit of %d: %w; split it (about %d of its %d changes fit in one), or raise the cluster's max_payload", len(payload), max, live.ErrTooLarge, fit, b.Len())}
	}
	if id == "" {
		id = nuid.Next()
	}
	var out Ack
	// Retried only within the dedup window: a retry after it could store
	// the batch twice.
	ctx, cancel := context.WithTimeout(ctx, dedupWindow/2)
	defer cancel()
	err = l.c.retry(ctx, "publishing to "+l.name, func(ctx context.Context) error {
		ack, err := l.c.js.Publish(ctx, l.subj, payload, jetstream.WithMsgID(id), jetstream.WithExpectStream(l.name))
		if err == nil {
			out = Ack{Seq: ack.Sequence, Duplicate: ack.Duplicate}
		}
		return err
	})
	if err != nil {
		return Ack{}, fmt.Errorf("fleet: publishing to index %q: %w", l.index, err)
	}
	return out, nil
}

// Bounds are the first and last sequences the log holds (first > last:
// none).
func (l *Log) Bounds(ctx context.Context) (first, last uint64, err error) {
	err = l.c.retry(ctx, "reading the state of "+l.name, func(ctx context.Context) error {
		info, err := l.stream.Info(ctx)
		if err == nil {
			first, last = info.State.FirstSeq, info.State.LastSeq
			if id := streamID(l.name, info); id != l.id {
				return fmt.Errorf("%w: the stream %s was created again (it is %s, this log was %s): restore a snapshot of the new one", ErrForeign, l.name, id, l.id)
			}
		}
		return err
	})
	return first, last, err
}

// streamID names a stream for good: its name and creation time.
func streamID(name string, info *jetstream.StreamInfo) string {
	return fmt.Sprintf("%s_%d", name, info.Created.UnixNano())
}

// claimGenesis checks that an index that has taken no batch of the log
// (checksum: its manifest's) is the one the log starts from, recording it
// when the log names none yet: a create in a key-value bucket, which
// only one replica can win.
func (l *Log) claimGenesis(ctx context.Context, checksum string) error {
	var kv jetstream.KeyValue
	err := l.c.retry(ctx, "opening the genesis bucket", func(ctx context.Context) error {
		var err error
		kv, err = l.c.js.KeyValue(ctx, genesisBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = l.c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: genesisBucket,
				Description: "gleaner: the index each update log starts from", Storage: jetstream.FileStorage, Replicas: l.c.cfg.Replicas})
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = l.c.js.KeyValue(ctx, genesisBucket)
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	var have string
	err = l.c.retry(ctx, "claiming the start of "+l.name, func(ctx context.Context) error {
		_, err := kv.Get(ctx, l.id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			// Unclaimed: only an empty log may be claimed (a log that holds
			// batches began from an index nobody recorded: a stream restored
			// from a backup, the bucket lost).
			if _, last, berr := l.Bounds(ctx); berr != nil || last > 0 {
				if berr == nil {
					berr = fmt.Errorf("%w: the log of index %q holds %d batches and names no index it began from: start from a snapshot of it, or begin a new fleet on a new stream", ErrForeign, l.index, last)
				}
				return berr
			}
		}
		_, err = kv.Create(ctx, l.id, []byte(checksum))
		if errors.Is(err, jetstream.ErrKeyExists) {
			e, gerr := kv.Get(ctx, l.id)
			if gerr == nil {
				have = string(e.Value())
			}
			if errors.Is(gerr, jetstream.ErrKeyNotFound) {
				gerr = nats.ErrTimeout // a follower that has not caught up: retried
			}
			return gerr
		}
		if err == nil {
			have = checksum
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("fleet: the start of the log of %q: %w", l.index, err)
	}
	if have != checksum {
		return fmt.Errorf("%w: the log of index %q starts from the index of manifest checksum %s, not %s",
			ErrForeign, l.index, have, checksum)
	}
	return nil
}

// genesisBucket is the key-value bucket of the logs' starting indexes.
const genesisBucket = "GLEANER_genesis"
