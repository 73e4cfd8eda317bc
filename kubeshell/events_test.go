package kubeshell

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSentence(t *testing.T) {
	for in, want := range map[string]string{"": "", "  ": "", "the class is gone": "The class is gone.", "Done.": "Done."} {
		if got := Sentence(in); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCutNoteKeepsCharactersWhole(t *testing.T) {
	long := strings.Repeat("ä", MaxNote)
	note := CutNote(long)
	if len(note) > MaxNote || !utf8.ValidString(note) || !strings.HasSuffix(note, "…") {
		t.Fatalf("%d bytes, valid %v", len(note), utf8.ValidString(note))
	}
	if CutNote("short") != "short" {
		t.Fatal("a short note was cut")
	}
}

func TestEvictionBlockedNoteNamesTheFirstPods(t *testing.T) {
	note := EvictionBlockedNote("n1", []string{"a/1: x", "a/2: x", "a/3: x", "a/4: x", "a/5: x"})
	if !strings.Contains(note, "node n1") || !strings.Contains(note, "a/3: x; and 2 more") || strings.Contains(note, "a/4") {
		t.Fatal(note)
	}
}
