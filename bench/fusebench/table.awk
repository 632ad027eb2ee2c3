# table.awk: the medians of a fusebench run (run.sh) in ms, as markdown
# tables with the ratios of PackFS to each alternative (below 1: PackFS
# is faster).
/^Benchmark/ {
	name = $1
	sub(/^Benchmark/, "", name)
	sub(/-[0-9]+$/, "", name)
	for (i = 2; i <= NF; i++)
		if ($(i+1) == "ns/op") {
			n[name]++
			v[name, n[name]] = $i / 1e6
		}
}
function median(name,    k, i, j, t, a) {
	k = n[name]
	if (k == 0)
		return ""
	for (i = 1; i <= k; i++)
		a[i] = v[name, i]
	for (i = 2; i <= k; i++)
		for (j = i; j > 1 && a[j-1] > a[j]; j--) {
			t = a[j]; a[j] = a[j-1]; a[j-1] = t
		}
	if (k % 2)
		return a[(k+1)/2]
	return (a[k/2] + a[k/2+1]) / 2
}
function cell(x) { return x == "" ? "-" : sprintf("%.0f", x) }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2f", a / b) }
function row(label, prefix, tools,    t, m, i, line) {
	split(tools, t, " ")
	line = "| " label
	for (i = 1; i <= 3; i++) {
		m[i] = median(prefix t[i])
		line = line " | " cell(m[i])
	}
	print line " | " ratio(m[1], m[2]) " | " ratio(m[1], m[3]) " |"
}
END {
	r = "packfs squashfuse squashfuse_ll"
	print "| row | packfs | squashfuse | squashfuse_ll | ÷ squashfuse | ÷ squashfuse_ll |"
	print "|---|---|---|---|---|---|"
	row("find+stat, cold", "FindStat/cold/", r)
	row("find+stat, warm", "FindStat/warm/", r)
	row("read all, cold", "ReadAll/cold/", r)
	row("read all, warm", "ReadAll/warm/", r)
	row("grep -r", "Grep/", r)
	print ""
	w = "packfs fuse-overlayfs tmpfs"
	print "| row | mounted store | fuse-overlayfs | tmpfs | ÷ fuse-overlayfs | ÷ tmpfs |"
	print "|---|---|---|---|---|---|"
	row("create+write 20,000 small files", "SmallFiles/create/", w)
	row("remove 20,000", "SmallFiles/remove/", w)
	row("64 MiB write", "Write64MiB/", w)
	if (n["LowerFiles/remove/packfs"] > 0) {
		print ""
		print "| row | packfs --upper | fuse-overlayfs | tmpfs | ÷ fuse-overlayfs | ÷ tmpfs |"
		print "|---|---|---|---|---|---|"
		row("remove 20,000 files of a lower", "LowerFiles/remove/", w)
		row("rename 20,000 files of a lower", "LowerFiles/rename/", w)
	}
	if (n["FindStat/cold/packfs-nodeapi"] > 0) {
		print ""
		print "| row | packfs, raw API | packfs, node API | ÷ node API |"
		print "|---|---|---|---|"
		split("FindStat/cold/ FindStat/warm/ ReadAll/cold/ ReadAll/warm/ Grep/", p, " ")
		split("find+stat,_cold find+stat,_warm read_all,_cold read_all,_warm grep_-r", l, " ")
		for (i = 1; i <= 5; i++) {
			a = median(p[i] "packfs"); b = median(p[i] "packfs-nodeapi")
			label = l[i]; gsub(/_/, " ", label)
			print "| " label " | " cell(a) " | " cell(b) " | " ratio(a, b) " |"
		}
	}
	print ""
	print "runs per cell: " n["FindStat/cold/packfs"]
}
