package xfer

import "testing"

// The server's check finds the first wrong byte wherever it falls,
// including across the end of the repeated block.
func TestFirstDiff(t *testing.T) {
	stream := func(off, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = block[(off+i)%blockLen]
		}
		return b
	}
	off := blockLen - 100
	b := stream(off, 300)
	if i := firstDiff(b, int64(off)); i != -1 {
		t.Fatalf("intact data: first difference at %d", i)
	}
	b[150] ^= 1
	if i := firstDiff(b, int64(off)); i != 150 {
		t.Fatalf("flipped byte 150 (past the block's end): found %d", i)
	}
	// A lost segment shifts everything after it.
	lost := append(stream(0, 1000), stream(2448, 1000)...)
	if i := firstDiff(lost, 0); i < 1000 || i > 1010 {
		t.Fatalf("segment lost at 1000: found %d", i)
	}
}
