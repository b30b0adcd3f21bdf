package framequeue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hangGuard bounds every wait on a channel that must become ready; it is a
// guard against a hung test, never a synchronization device.
const hangGuard = 10 * time.Second

// pushAsync starts Push in a goroutine and returns the channel its result
// arrives on.
func pushAsync(ctx context.Context, q *Queue, frame []byte) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- q.Push(ctx, frame) }()
	return ch
}

// notReturned fails the test when the push has already returned.
func notReturned(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s: Push returned %v, want it still blocked", what, err)
	default:
	}
}

// returned waits (bounded) for the push to return and gives its error.
func returned(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("%s: Push did not return", what)
		return nil
	}
}

func mustPush(t *testing.T, q *Queue, frame string) {
	t.Helper()
	if err := q.Push(context.Background(), []byte(frame)); err != nil {
		t.Fatalf("Push(%q): %v", frame, err)
	}
}

func mustPop(t *testing.T, q *Queue, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	got, ok := q.Pop(ctx)
	if !ok {
		t.Fatalf("Pop: ok=false, want %q", want)
	}
	if string(got) != want {
		t.Fatalf("Pop = %q, want %q", got, want)
	}
}

func TestFIFOOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxFrames int
		maxBytes  int64
		frames    []string
	}{
		{"single", 4, 64, []string{"a"}},
		{"several", 8, 64, []string{"one", "two", "three", "four"}},
		{"exactly full by frames", 3, 64, []string{"a", "b", "c"}},
		{"exactly full by bytes", 16, 6, []string{"ab", "cd", "ef"}},
		{"empty frames count as frames", 3, 64, []string{"", "x", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := New(tc.maxFrames, tc.maxBytes)
			for _, f := range tc.frames {
				mustPush(t, q, f)
			}
			if q.Len() != len(tc.frames) {
				t.Fatalf("Len = %d, want %d", q.Len(), len(tc.frames))
			}
			for _, f := range tc.frames {
				mustPop(t, q, f)
			}
			if q.Len() != 0 {
				t.Fatalf("Len after draining = %d, want 0", q.Len())
			}
		})
	}
}

func TestFIFOInterleaved(t *testing.T) {
	t.Parallel()
	q := New(2, 100)
	mustPush(t, q, "1")
	mustPush(t, q, "2")
	mustPop(t, q, "1")
	mustPush(t, q, "3")
	mustPop(t, q, "2")
	mustPop(t, q, "3")
}

func TestPushBlocksUntilPopFreesRoom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxFrames int
		maxBytes  int64
		fill      []string // makes the queue full for next
		next      string
		// pops is how many frames must be popped before next fits.
		pops int
	}{
		{"frame bound", 2, 1 << 20, []string{"a", "b"}, "c", 1},
		{"frame bound of one", 1, 1 << 20, []string{"a"}, "b", 1},
		{"byte bound", 100, 10, []string{"12345", "67890"}, "x", 1},
		{"byte bound needs two pops", 100, 10, []string{"123", "456", "7890"}, "abcdef", 2},
		{"byte bound, frame exactly the bound", 100, 4, []string{"ab"}, "cdef", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := New(tc.maxFrames, tc.maxBytes)
			for _, f := range tc.fill {
				mustPush(t, q, f)
			}
			ch := pushAsync(context.Background(), q, []byte(tc.next))
			notReturned(t, ch, "queue full")
			for i := 0; i < tc.pops; i++ {
				notReturned(t, ch, fmt.Sprintf("before pop %d", i+1))
				mustPop(t, q, tc.fill[i])
			}
			if err := returned(t, ch, "after pops"); err != nil {
				t.Fatalf("Push after room was freed: %v", err)
			}
			for _, f := range tc.fill[tc.pops:] {
				mustPop(t, q, f)
			}
			mustPop(t, q, tc.next)
		})
	}
}

// TestPushStaysBlockedWhileFull checks the blocked push repeatedly, not just
// once, while the queue is still full: a Pop that frees too little must not
// let it through.
func TestPushStaysBlockedWhileFull(t *testing.T) {
	t.Parallel()
	q := New(100, 10)
	mustPush(t, q, "1234")
	mustPush(t, q, "5678")
	ch := pushAsync(context.Background(), q, []byte("abcdefgh")) // needs 8; 2 free
	for i := 0; i < 100; i++ {
		notReturned(t, ch, "2 bytes free")
	}
	mustPop(t, q, "1234") // 6 free: still not enough
	for i := 0; i < 100; i++ {
		notReturned(t, ch, "6 bytes free")
	}
	mustPop(t, q, "5678")
	if err := returned(t, ch, "10 bytes free"); err != nil {
		t.Fatal(err)
	}
	mustPop(t, q, "abcdefgh")
}

func TestPushContextEndsWhileWaiting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxFrames int
		maxBytes  int64
		fill      []string
		blocked   string
		// after cancelling and popping everything, these must all fit at
		// once: the blocked push released what it had acquired.
		after []string
	}{
		{"waiting for bytes", 10, 8, []string{"12345678"}, "abcd", []string{"ABCDEFGH"}},
		{"waiting for bytes, partly free", 10, 8, []string{"123456"}, "abcd", []string{"12345678"}},
		// Bytes are acquired before the frame slot: the push below holds 4
		// bytes while it waits for a slot and must give them back.
		{"waiting for a frame slot", 2, 8, []string{"a", "b"}, "cdef", []string{"ABCD", "EFGH"}},
		{"waiting for the only frame slot", 1, 8, []string{"a"}, "bcdefgh", []string{"12345678"}},
	}
	causes := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		for _, cause := range causes {
			t.Run(tc.name+"/"+cause.name, func(t *testing.T) {
				q := New(tc.maxFrames, tc.maxBytes)
				for _, f := range tc.fill {
					mustPush(t, q, f)
				}
				ctx, cancel := cause.ctx()
				defer cancel()
				ch := pushAsync(ctx, q, []byte(tc.blocked))
				if cause.want == context.Canceled {
					notReturned(t, ch, "before cancel")
					cancel()
				}
				err := returned(t, ch, "after the ctx ended")
				if !errors.Is(err, cause.want) {
					t.Fatalf("Push = %v, want %v", err, cause.want)
				}
				if q.Len() != len(tc.fill) {
					t.Fatalf("Len = %d, want %d: the failed push must not be queued", q.Len(), len(tc.fill))
				}
				for _, f := range tc.fill {
					mustPop(t, q, f)
				}
				// Everything the failed push acquired is back: the queue
				// takes a full load without blocking.
				for _, f := range tc.after {
					ch := pushAsync(context.Background(), q, []byte(f))
					if err := returned(t, ch, "after release"); err != nil {
						t.Fatalf("Push(%q) after the cancelled push: %v", f, err)
					}
				}
				for _, f := range tc.after {
					mustPop(t, q, f)
				}
			})
		}
	}
}

func TestPushWithEndedContext(t *testing.T) {
	t.Parallel()
	// A push that would have to wait fails with ctx.Err() at once when its
	// ctx has already ended, and nothing is queued.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q := New(1, 8)
	mustPush(t, q, "x")
	if err := q.Push(ctx, []byte("y")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Push on a full queue with a cancelled ctx = %v, want context.Canceled", err)
	}
	if err := q.Push(ctx, []byte("123456789")); err == nil {
		t.Fatal("oversized Push with a cancelled ctx succeeded")
	}
	mustPop(t, q, "x")
	if q.Len() != 0 {
		t.Fatalf("Len = %d, want 0", q.Len())
	}
}

func TestOversizedFrameFailsAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		maxBytes int64
		size     int
	}{
		{"one over", 8, 9},
		{"far over", 8, 1 << 16},
		{"zero bound", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := New(4, tc.maxBytes)
			// Even with an empty queue and a context that never ends, the
			// push must not wait.
			ch := pushAsync(context.Background(), q, make([]byte, tc.size))
			err := returned(t, ch, "oversized")
			if err == nil {
				t.Fatal("Push of an oversized frame succeeded")
			}
			if errors.Is(err, ErrClosed) {
				t.Fatalf("Push = %v, want an oversize error, not ErrClosed", err)
			}
			if q.Len() != 0 {
				t.Fatalf("Len = %d, want 0", q.Len())
			}
		})
	}
}

func TestOversizedFrameFailsEvenWhenFull(t *testing.T) {
	t.Parallel()
	q := New(1, 4)
	mustPush(t, q, "abcd")
	err := returned(t, pushAsync(context.Background(), q, []byte("12345")), "oversized on full queue")
	if err == nil {
		t.Fatal("oversized Push succeeded")
	}
	mustPop(t, q, "abcd")
}

func TestClose(t *testing.T) {
	t.Parallel()
	t.Run("push after close fails", func(t *testing.T) {
		q := New(4, 64)
		q.Close()
		if err := q.Push(context.Background(), []byte("x")); !errors.Is(err, ErrClosed) {
			t.Fatalf("Push after Close = %v, want ErrClosed", err)
		}
		if q.Len() != 0 {
			t.Fatalf("Len = %d, want 0", q.Len())
		}
	})
	t.Run("queued frames still pop, then ok=false", func(t *testing.T) {
		q := New(4, 64)
		mustPush(t, q, "a")
		mustPush(t, q, "b")
		mustPush(t, q, "c")
		q.Close()
		if err := q.Push(context.Background(), []byte("d")); !errors.Is(err, ErrClosed) {
			t.Fatalf("Push after Close = %v, want ErrClosed", err)
		}
		mustPop(t, q, "a")
		mustPop(t, q, "b")
		mustPop(t, q, "c")
		for i := 0; i < 3; i++ {
			if f, ok := q.Pop(context.Background()); ok {
				t.Fatalf("Pop on a closed, drained queue = %q, ok=true", f)
			}
		}
	})
	t.Run("close is idempotent", func(t *testing.T) {
		q := New(4, 64)
		q.Close()
		q.Close()
		if _, ok := q.Pop(context.Background()); ok {
			t.Fatal("Pop on closed empty queue: ok=true")
		}
	})
	t.Run("close wakes a waiting pop", func(t *testing.T) {
		q := New(4, 64)
		type popped struct {
			f  []byte
			ok bool
		}
		ch := make(chan popped, 1)
		go func() {
			f, ok := q.Pop(context.Background())
			ch <- popped{f, ok}
		}()
		select {
		case p := <-ch:
			t.Fatalf("Pop on an empty queue returned %q, %v before Close", p.f, p.ok)
		default:
		}
		q.Close()
		select {
		case p := <-ch:
			if p.ok {
				t.Fatalf("Pop after Close = %q, ok=true", p.f)
			}
		case <-time.After(hangGuard):
			t.Fatal("Close did not wake Pop")
		}
	})
	t.Run("close wakes a push waiting for a frame slot", func(t *testing.T) {
		q := New(1, 64)
		mustPush(t, q, "a")
		ch := pushAsync(context.Background(), q, []byte("b"))
		notReturned(t, ch, "before Close")
		q.Close()
		if err := returned(t, ch, "after Close"); !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked Push after Close = %v, want ErrClosed", err)
		}
		mustPop(t, q, "a")
		if _, ok := q.Pop(context.Background()); ok {
			t.Fatal("the push woken by Close was queued")
		}
	})
	t.Run("push waiting for bytes wakes on its ctx after close", func(t *testing.T) {
		// Documented: Close does not wake a push waiting for bytes; its
		// context does.
		q := New(4, 4)
		mustPush(t, q, "abcd")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch := pushAsync(ctx, q, []byte("e"))
		notReturned(t, ch, "before Close")
		q.Close()
		cancel()
		if err := returned(t, ch, "after cancel"); err == nil {
			t.Fatal("push waiting for bytes succeeded after Close")
		}
		mustPop(t, q, "abcd")
		if _, ok := q.Pop(context.Background()); ok {
			t.Fatal("Pop after drain: ok=true")
		}
	})
}

func TestPopContext(t *testing.T) {
	t.Parallel()
	t.Run("cancelled ctx on an empty queue", func(t *testing.T) {
		q := New(4, 64)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if f, ok := q.Pop(ctx); ok || f != nil {
			t.Fatalf("Pop = %q, %v; want nil, false", f, ok)
		}
		// The queue still works.
		mustPush(t, q, "x")
		mustPop(t, q, "x")
	})
	t.Run("cancelled ctx with a queued frame returns it", func(t *testing.T) {
		q := New(4, 64)
		mustPush(t, q, "x")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f, ok := q.Pop(ctx)
		if !ok || string(f) != "x" {
			t.Fatalf("Pop = %q, %v; want \"x\", true (a ready frame is never lost)", f, ok)
		}
	})
	t.Run("ctx ends while waiting", func(t *testing.T) {
		q := New(4, 64)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan bool, 1)
		go func() {
			_, ok := q.Pop(ctx)
			done <- ok
		}()
		select {
		case ok := <-done:
			t.Fatalf("Pop on an empty queue returned ok=%v before cancel", ok)
		default:
		}
		cancel()
		select {
		case ok := <-done:
			if ok {
				t.Fatal("Pop after cancel: ok=true")
			}
		case <-time.After(hangGuard):
			t.Fatal("cancel did not wake Pop")
		}
		// A later push is not lost to the abandoned Pop.
		mustPush(t, q, "y")
		mustPop(t, q, "y")
	})
	t.Run("pop frees bytes for a push", func(t *testing.T) {
		q := New(4, 3)
		mustPush(t, q, "abc")
		mustPop(t, q, "abc")
		mustPush(t, q, "def") // would block forever if Pop kept the bytes
		mustPop(t, q, "def")
	})
}

// TestConcurrentProducers runs several producers against one consumer
// through a small queue, so producers block often. Each producer's frames
// must arrive in its own order, none lost or duplicated, and the queue must
// never hold more than its bounds.
func TestConcurrentProducers(t *testing.T) {
	t.Parallel()
	const (
		producers = 8
		perProd   = 500
		maxFrames = 4
		maxBytes  = 64
	)
	q := New(maxFrames, maxBytes)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < perProd; i++ {
				// Sizes vary so the byte bound matters too.
				frame := fmt.Appendf(nil, "%d:%d:%s", p, i, make([]byte, i%20))
				if err := q.Push(ctx, frame); err != nil {
					errs <- fmt.Errorf("producer %d frame %d: %w", p, i, err)
					return
				}
			}
		}(p)
	}
	go func() { wg.Wait(); q.Close() }()

	next := make([]int, producers)
	total := 0
	for {
		if n := q.Len(); n > maxFrames {
			t.Fatalf("Len = %d, over the frame bound %d", n, maxFrames)
		}
		f, ok := q.Pop(ctx)
		if !ok {
			break
		}
		if int64(len(f)) > maxBytes {
			t.Fatalf("frame of %d bytes over the byte bound", len(f))
		}
		var p, i int
		if _, err := fmt.Sscanf(string(f), "%d:%d:", &p, &i); err != nil {
			t.Fatalf("bad frame %q: %v", f, err)
		}
		if p < 0 || p >= producers || i != next[p] {
			t.Fatalf("frame %d of producer %d arrived, want frame %d", i, p, next[p])
		}
		next[p]++
		total++
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("test timed out: %v", ctx.Err())
	}
	if total != producers*perProd {
		t.Fatalf("received %d frames, want %d", total, producers*perProd)
	}
}

func BenchmarkPushPop(b *testing.B) {
	q := New(256, 1<<20)
	ctx := context.Background()
	frame := make([]byte, 512)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := q.Push(ctx, frame); err != nil {
			b.Fatal(err)
		}
		if _, ok := q.Pop(ctx); !ok {
			b.Fatal("Pop: ok=false")
		}
	}
}

// A waiter that gives up must not swallow the wake-up another waiter needs.
func TestCancelledWaiterPassesTheWakeUpOn(t *testing.T) {
	t.Parallel()
	q := New(10, 10)
	if err := q.Push(context.Background(), make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	quitter := make(chan error, 1)
	go func() { quitter <- q.Push(ctx, make([]byte, 5)) }()
	stayer := make(chan error, 1)
	go func() { stayer <- q.Push(context.Background(), make([]byte, 5)) }()
	// Free room and cancel the first waiter at once: whichever takes the
	// token, the second must get its bytes.
	if _, ok := q.TryPop(); !ok {
		t.Fatal("nothing to pop")
	}
	cancel()
	select {
	case err := <-stayer:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the remaining waiter was never woken")
	}
	<-quitter
}

func TestRoom(t *testing.T) {
	t.Parallel()
	q := New(2, 10)
	if !q.Room(10) || q.Room(11) {
		t.Fatal("an empty queue: room for its byte bound, not for more")
	}
	mustPush(t, q, "12345")
	if !q.Room(5) || q.Room(6) {
		t.Fatal("five bytes queued: room for five more, not six")
	}
	mustPush(t, q, "1")
	if q.Room(1) {
		t.Fatal("two frames queued: no room for a third, however small")
	}
	if _, ok := q.TryPop(); !ok || !q.Room(4) {
		t.Fatal("no room after a pop")
	}
	q.Close()
	if !q.Room(100) {
		t.Fatal("a closed queue does not make a pusher wait")
	}
}
