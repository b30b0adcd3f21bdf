// Package cdncrypt is the encryption of WeChat's iLink CDN: AES-128 in ECB
// mode with PKCS#7 padding, and the two textual forms its keys travel in.
// The adapter and the fake iLink server share it, so both ends agree on
// one definition.
package cdncrypt

import (
	"crypto/aes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeySize is the length of a CDN key in bytes (AES-128).
const KeySize = 16

// ErrBadCiphertext is returned for data that is not a whole number of
// blocks or whose padding is not PKCS#7: a wrong key or a damaged file.
var ErrBadCiphertext = errors.New("the media does not decrypt with its key (wrong key or damaged download)")

// PaddedSize is the ciphertext length of n plain bytes: PKCS#7 always adds
// 1 to 16 bytes. The upload API checks it as "filesize".
func PaddedSize(n int64) int64 { return (n/aes.BlockSize + 1) * aes.BlockSize }

// Encrypt returns plain encrypted with key (16 bytes), PKCS#7 padded.
func Encrypt(key, plain []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("a CDN key is %d bytes, not %d", KeySize, len(key))
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	out := make([]byte, len(plain)+pad)
	copy(out, plain)
	for i := len(plain); i < len(out); i++ {
		out[i] = byte(pad)
	}
	// ECB: every block on its own; the platform's choice, not ours.
	for i := 0; i < len(out); i += aes.BlockSize {
		b.Encrypt(out[i:i+aes.BlockSize], out[i:i+aes.BlockSize])
	}
	return out, nil
}

// Decrypt reverses Encrypt, checking the padding.
func Decrypt(key, data []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("a CDN key is %d bytes, not %d", KeySize, len(key))
	}
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, ErrBadCiphertext
	}
	out := make([]byte, len(data))
	for i := 0; i < len(data); i += aes.BlockSize {
		b.Decrypt(out[i:i+aes.BlockSize], data[i:i+aes.BlockSize])
	}
	pad := int(out[len(out)-1])
	if pad == 0 || pad > aes.BlockSize {
		return nil, ErrBadCiphertext
	}
	for _, c := range out[len(out)-pad:] {
		if int(c) != pad {
			return nil, ErrBadCiphertext
		}
	}
	return out[:len(out)-pad], nil
}

// ParseKey reads a key in any form the API uses: 32 hex digits
// (image_item.aeskey), or base64 of either the 16 raw bytes or those 32
// hex digits (media.aes_key).
func ParseKey(s string) ([]byte, error) {
	if k, err := hex.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(raw) == KeySize {
			return raw, nil
		}
		if k, err := hex.DecodeString(string(raw)); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("the media key is neither 32 hex digits nor base64 of a 16-byte key (%d characters)", len(s))
}

// KeyForSend is the aes_key form a sent media item carries: base64 of the
// key's hex digits, as the official client writes it.
func KeyForSend(key []byte) string {
	return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(key)))
}
