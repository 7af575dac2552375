package lessons

// rabbitSpeeds raises runRabbit's default speed for lessons that are long
// in lesson time (Q12's 30 s outage, Q13's 14 rounds of 5 s), so that the
// package stays quick enough for go test -count=20. Their broker tests
// assert counts and fates, which a higher speed's jitter cannot change.
var rabbitSpeeds = map[string]float64{"Q12": 100, "Q13": 200}
