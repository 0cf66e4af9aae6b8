// Package exec holds the streaming executors: the table executor (DML
// source + materialize), and the operators of materialized views.
//
// Every executor keeps its state in state tables (package state), commits
// them when it passes a barrier, and checks its context in every loop whose
// length depends on data (I5). Input that contradicts state is an error
// naming the table and key (I6), never a panic.
package exec
