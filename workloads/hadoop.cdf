# Flow sizes of a Hadoop cluster: the distribution measured in "Inside the Social
# Network's (Datacenter) Network" (SIGCOMM 2015) and used, in this form, by "HPCC: High
# Precision Congestion Control" (SIGCOMM 2019) and most RoCE congestion-control papers since.
# Each line: a flow size in bytes, and the fraction of flows of at most that size
# (cumulative, 0 to 1); sizes between two points are drawn uniformly between them.
0 0
100 0.01
200 0.02
300 0.05
350 0.15
400 0.20
500 0.30
600 0.40
700 0.50
1000 0.60
2000 0.67
7000 0.70
30000 0.72
50000 0.82
80000 0.87
120000 0.90
300000 0.95
1000000 0.975
2000000 0.99
10000000 1
