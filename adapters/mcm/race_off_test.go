//go:build !race

package mcm

const raceOn = false
