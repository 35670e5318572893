#!/usr/bin/python3
"""An argparse CLI with no JSON convention and no schema dump."""
import argparse

parser = argparse.ArgumentParser(description="Convert a temperature between units")
parser.add_argument("--celsius", type=float, required=True, help="Temperature in Celsius")
args = parser.parse_args()
print(args.celsius * 9 / 5 + 32)
