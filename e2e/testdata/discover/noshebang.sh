echo "not executable and no #! line"
