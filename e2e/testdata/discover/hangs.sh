#!/bin/sh
# Never answers: every probe must be killed at its time limit.
sleep 60
