package webfetch

import (
	"container/list"
	"sync"
)

// Cache bounds: a session keeps the last few pages it fetched, so that
// reading a long page part by part downloads it once. The byte bound grows
// to twice MaxBytes when that is larger, so one page of the largest
// allowed download always fits.
const (
	cacheEntries = 8
	cacheBytes   = 8 << 20
)

// document is a fetched page, converted to text.
type document struct {
	URL         string // final URL after redirects
	Status      string // "200 OK"
	OK          bool   // a 2xx status
	ContentType string
	Title       string
	Text        string
	// Cut is set when the download stopped at MaxBytes.
	Cut bool
	// Runes is the length of Text in characters.
	Runes int
}

// cache is a small LRU of documents keyed by request, safe for concurrent
// use.
type cache struct {
	mu      sync.Mutex
	order   *list.List // of *cacheItem, most recent first
	byKey   map[string]*list.Element
	size    int
	entries int
	bytes   int
}

type cacheItem struct {
	key string
	doc *document
}

func newCache(entries, bytes int) *cache {
	return &cache{order: list.New(), byKey: map[string]*list.Element{}, entries: entries, bytes: bytes}
}

func (c *cache) get(key string) (*document, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheItem).doc, true
}

// put stores doc under key, evicting the least recently used documents
// beyond the bounds. A document larger than the whole cache is not kept.
func (c *cache) put(key string, doc *document) {
	n := len(doc.Text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.size -= len(e.Value.(*cacheItem).doc.Text)
		c.order.Remove(e)
		delete(c.byKey, key)
	}
	if n > c.bytes {
		return
	}
	c.byKey[key] = c.order.PushFront(&cacheItem{key: key, doc: doc})
	c.size += n
	for c.order.Len() > c.entries || c.size > c.bytes {
		last := c.order.Back()
		it := last.Value.(*cacheItem)
		c.order.Remove(last)
		delete(c.byKey, it.key)
		c.size -= len(it.doc.Text)
	}
}

func (c *cache) len() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.size
}
