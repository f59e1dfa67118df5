# Flow sizes of a web-search cluster: the distribution measured in "Data Center TCP
# (DCTCP)" (SIGCOMM 2010) and used, in this form, by "HPCC: High Precision Congestion
# Control" (SIGCOMM 2019) and most RoCE congestion-control papers since.
# Each line: a flow size in bytes, and the fraction of flows of at most that size
# (cumulative, 0 to 1); sizes between two points are drawn uniformly between them.
0 0
10000 0.15
20000 0.20
30000 0.30
50000 0.40
80000 0.53
200000 0.60
1000000 0.70
2000000 0.80
5000000 0.90
10000000 0.97
30000000 1
