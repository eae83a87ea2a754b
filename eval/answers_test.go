package eval

import "testing"

func TestNormalizeAnswer(t *testing.T) {
	for in, want := range map[string]string{
		"The Beatles":                    "beatles",
		"  Detroit,   Michigan ":         "detroit michigan",
		"A Tale of Two Cities":           "tale of two cities",
		"an apple, the pear & a plum!":   "apple pear plum",
		"U.S.A.":                         "usa",
		"Andrzej Żuławski":               "andrzej żuławski",
		"20 March 851":                   "20 march 851",
		"Theatre":                        "theatre", // "the" only as a whole word
		"\"Hello\" -- (world)":           "hello world",
		"the":                            "",
		"Basal cell carcinoma (BCC) is…": "basal cell carcinoma bcc is…", // non-ASCII punctuation stays, as in SQuAD
	} {
		if got := NormalizeAnswer(in); got != want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScoreAnswers(t *testing.T) {
	texts := []string{
		"Aretha Franklin was born in Memphis, Tennessee.",
		"She died in 19123 of nothing.",
		"She died in Detroit, Michigan, in 2018.",
	}
	cut := []int{1, 2, 3, 5}
	check := func(answers []string, want ...float64) {
		t.Helper()
		got := ScoreAnswers(texts, answers, cut)
		for i, k := range cut {
			if got[Name(AnswerRecall, k)] != want[i] {
				t.Errorf("answers %q: answer_recall@%d = %v, want %v", answers, k, got[Name(AnswerRecall, k)], want[i])
			}
		}
	}
	check([]string{"Detroit"}, 0, 0, 1, 1)
	check([]string{"Motor City", "Detroit, Michigan"}, 0, 0, 1, 1) // an alias counts
	check([]string{"1912"}, 0, 0, 0, 0)                            // not inside 19123
	check([]string{"the Memphis"}, 1, 1, 1, 1)                     // articles dropped on both sides
	check([]string{"tennessee."}, 1, 1, 1, 1)
	check([]string{""}, 0, 0, 0, 0)
	check(nil, 0, 0, 0, 0)
}
