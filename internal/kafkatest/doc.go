// Package kafkatest gives tests a real Apache Kafka broker and a few
// helpers around it (create a topic, produce lines, read a topic back with
// read_committed up to its last stable offsets), and Producer, which writes
// keyed-count input until stopped and keeps the model its output is
// checked against.
//
// Broker returns a bootstrap address: WEIR_KAFKA_BROKERS when set (a
// comma-separated list, used as is), else a single-node KRaft broker that
// scripts/kafka-broker starts once per test binary, on a free port in a
// temporary folder. A test binary that uses it should call Main from its
// TestMain, which stops that broker and removes its folder when the tests
// end; a watchdog the script starts also stops it if the test binary dies
// another way (a timeout panic, SIGKILL), so no broker outlives its tests.
//
// The broker needs Java 17+ and Kafka's jars, which scripts/kafka-broker
// fetches with Maven into .cache/kafka (scripts/test fetches them first).
// When they are missing a test fails under CI (CI set, and not "false" or
// "0") and skips elsewhere, saying what is missing.
package kafkatest
