package cdncrypt

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"
)

var testKey = []byte("0123456789abcdef")

func TestRoundTripAndPaddedSize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 1000} {
		plain := bytes.Repeat([]byte{'x'}, n)
		c, err := Encrypt(testKey, plain)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(c)) != PaddedSize(int64(n)) {
			t.Errorf("n=%d: ciphertext %d bytes, PaddedSize %d", n, len(c), PaddedSize(int64(n)))
		}
		p, err := Decrypt(testKey, c)
		if err != nil || !bytes.Equal(p, plain) {
			t.Errorf("n=%d: round trip gave %q, %v", n, p, err)
		}
	}
	if PaddedSize(16) != 32 || PaddedSize(15) != 16 {
		t.Error("PaddedSize must always add a block for a multiple of 16")
	}
}

func TestDecryptRejects(t *testing.T) {
	t.Parallel()
	c, _ := Encrypt(testKey, []byte("hello"))
	if _, err := Decrypt([]byte("fedcba9876543210"), c); !errors.Is(err, ErrBadCiphertext) {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := Decrypt(testKey, c[:10]); !errors.Is(err, ErrBadCiphertext) {
		t.Errorf("short data: %v", err)
	}
	if _, err := Decrypt(testKey[:5], c); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}

func TestParseKeyForms(t *testing.T) {
	t.Parallel()
	h := hex.EncodeToString(testKey)
	for name, s := range map[string]string{
		"hex":           h,
		"base64 raw":    base64.StdEncoding.EncodeToString(testKey),
		"base64 of hex": base64.StdEncoding.EncodeToString([]byte(h)),
		"send form":     KeyForSend(testKey),
	} {
		k, err := ParseKey(s)
		if err != nil || !bytes.Equal(k, testKey) {
			t.Errorf("%s %q: %x, %v", name, s, k, err)
		}
	}
	for _, bad := range []string{"", "abc", hex.EncodeToString(testKey[:8]), "!!!!"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func FuzzDecrypt(f *testing.F) {
	c, _ := Encrypt(testKey, []byte("seed"))
	f.Add(c, hex.EncodeToString(testKey))
	f.Add([]byte{1, 2, 3}, "zz")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		k, err := ParseKey(key)
		if err != nil {
			return
		}
		p, err := Decrypt(k, data)
		if err != nil {
			return
		}
		again, err := Encrypt(k, p)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decrypt then encrypt changed the data")
		}
	})
}
