#!/bin/sh
echo should not be probed
